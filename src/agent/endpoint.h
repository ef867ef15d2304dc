/*
 * endpoint.h - where the agent's session (session.c) finds its byte stream.
 * Threads: any; no state.
 */
#ifndef PANDASTACK_AGENT_ENDPOINT_H
#define PANDASTACK_AGENT_ENDPOINT_H

#include <stddef.h>

/*
 * endpoint_find_virtio_port - the device of the virtio-serial port called
 * name (the `name` file under /sys/class/virtio-ports/<dev>, virtio-serial's
 * port naming), as "/dev/<dev>" into out (outlen bytes).  0, -ENOENT (no
 * such port yet: the driver may still be probing) or -errno reading sysfs.
 */
int endpoint_find_virtio_port(const char *name, char *out, size_t outlen);

/*
 * endpoint_listen_unix - a non-blocking, close-on-exec Unix stream socket
 * listening at path.  It is bound under a temporary name and renamed into
 * place once listening, so a client that sees path can connect (no window
 * between bind and listen); an old socket at path is replaced, any other
 * file there is not (-EEXIST).  Returns the descriptor (the caller's), or
 * -errno (-ENAMETOOLONG: path does not fit a socket address).
 */
int endpoint_listen_unix(const char *path);

#endif
