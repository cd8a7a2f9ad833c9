/*
 * 6.2 (fb87bd47516d "net: introduce sk_use_task_frag in struct sock"):
 * sockets used from filesystem context must not use the task's page_frag.
 */
#include <net/sock.h>
void probe(struct sock *sk) { sk->sk_use_task_frag = false; }
