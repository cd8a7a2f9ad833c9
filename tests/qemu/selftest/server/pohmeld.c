/* Stand-in for pohmeld in tests/qemu/selftest: listens on -p PORT (7349),
 * accepts and closes connections; -e DIR and other options are ignored. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int port = 7349, one = 1, s, c, opt;

	while ((opt = getopt(argc, argv, "c:e:p:k:s:nd")) != -1)
		if (opt == 'p')
			port = atoi(optarg);
	sa.sin_port = htons(port);
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s, 16)) {
		perror("pohmeld (dummy)");
		return 1;
	}
	fprintf(stderr, "<6>dummy pohmeld listening on %d\n", port);
	for (;;) {
		c = accept(s, NULL, NULL);
		if (c >= 0)
			close(c);
	}
}
