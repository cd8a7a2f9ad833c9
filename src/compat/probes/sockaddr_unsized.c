/*
 * 6.19 (bf33247a "net: introduce struct sockaddr_unsized"): kernel_connect()
 * takes a struct sockaddr_unsized *.
 */
#include <linux/net.h>
#include <linux/socket.h>
int probe(struct socket *s, struct sockaddr_storage *a, int len)
{
	return kernel_connect(s, (struct sockaddr_unsized *)a, len, 0);
}
