/* SPDX-License-Identifier: MIT */
/* Commands of the pohmel tool that live in files of their own. */
#ifndef POHMEL_CMD_H
#define POHMEL_CMD_H

#include "libpohmel.h"

/* pohmel HOST clients [-r]: 0, 1 (failed, said why), -EINVAL: usage */
int pohmel_clients(struct pc *pc, int argc, char **argv);

#endif
