/*
 * 6.5 (b841b901c452 "net: Declare MSG_SPLICE_PAGES internal sendmsg()
 * flag", then dc97391e6610 "sock: Remove ->sendpage*() in favour of
 * sendmsg(MSG_SPLICE_PAGES)"): pages are sent by reference through
 * sendmsg; kernel_sendpage() is gone.
 */
#include <linux/socket.h>
int probe(void) { return MSG_SPLICE_PAGES; }
