/*
 * jupyter_msg.h - the Jupyter wire format (messaging spec 5.3, "The Wire
 * Protocol"): multipart frames <-> a parsed message, HMAC-SHA256 signing
 * and constant-time verification with libcrypto, fresh message ids.
 *
 *   [ident..] "<IDS|MSG>" signature header parent_header metadata content
 *   [buffers..]
 *
 * The signature is lowercase hex HMAC-SHA256 keyed with the connection
 * file's "key" string (its bytes, as ipykernel uses them) over the four JSON
 * frames as sent.  An empty key means no signing: the signature frame is
 * empty and not checked.  Every frame is untrusted: parsing never aborts,
 * repairs invalid UTF-8 (jupyter_json.h) and refuses what it cannot use.
 *
 * Pure functions apart from reading the clock and getrandom for ids.
 * Threads: any.
 */
#ifndef PANDASTACK_AGENT_JUPYTER_MSG_H
#define PANDASTACK_AGENT_JUPYTER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The frame that ends the routing identities. */
#define JUPYTER_DELIM "<IDS|MSG>"
/* Protocol version we put in our headers (what ipykernel 6 reports). */
#define JUPYTER_PROTOCOL_VERSION "5.3"
/* Size of a message id buffer (a UUID string is 36 bytes + NUL). */
#define JUPYTER_ID_SIZE 40
/* Hex HMAC-SHA256 signature: 64 digits + NUL. */
#define JUPYTER_SIG_SIZE 65
/* Longest key we accept, bytes. */
#define JUPYTER_KEY_MAX 256

/* One frame as received or to send: borrowed bytes. */
struct jupyter_frame {
	const void *data;
	size_t len;
};

/*
 * A parsed message.  The four JSON parts are owned (free with
 * jupyter_msg_clear); the strings point into them and live as long as they.
 * header, parent_header, metadata and content are always objects;
 * msg_type, msg_id, parent_id and session are "" when absent.
 */
struct jupyter_msg {
	json_t *header, *parent_header, *metadata, *content;
	const char *msg_type;
	const char *msg_id;
	const char *parent_id;  /* parent_header.msg_id: routes to a request */
	const char *session;
	size_t nbuffers;        /* raw buffers after content (not kept) */
};

/*
 * jupyter_sign - hex HMAC-SHA256 of the four parts keyed with key (keylen
 * bytes) into out (JUPYTER_SIG_SIZE bytes).  keylen 0 writes "".
 * Returns 0, -EINVAL (keylen > JUPYTER_KEY_MAX), -ENOMEM, -EIO (libcrypto).
 */
int jupyter_sign(const void *key, size_t keylen,
		 const struct jupyter_frame part[4], char out[JUPYTER_SIG_SIZE]);

/*
 * jupyter_msg_is_output - 1 if n frames (identities first) are a message
 * whose header says stream, display_data, update_display_data or
 * execute_result, else 0 (also for anything malformed).  Reads the header
 * part alone (at most JUPYTER_HEADER_PEEK_MAX bytes) and verifies nothing:
 * only for choosing to drop a message unread, never to trust one.
 */
#define JUPYTER_HEADER_PEEK_MAX 4096
int jupyter_msg_is_output(const struct jupyter_frame *f, size_t n);

/*
 * jupyter_msg_is_output_of - jupyter_msg_is_output, and the parent header
 * part (at most JUPYTER_HEADER_PEEK_MAX bytes, unverified) names the
 * request parent_id (NULL: any).  Same use and limits.
 */
int jupyter_msg_is_output_of(const struct jupyter_frame *f, size_t n, const char *parent_id);

/*
 * jupyter_msg_parse - parse n frames (identities first) into *m, verifying
 * the signature when keylen > 0 (constant-time compare).
 * Returns 0 and fills *m (the caller clears it), -EBADMSG (no delimiter,
 * missing frames, a part that is not a JSON object even after repair, a
 * missing msg_type), -EPERM (bad signature), -ENOMEM.  On error *m holds
 * nothing to free.
 */
int jupyter_msg_parse(const struct jupyter_frame *f, size_t n,
		      const void *key, size_t keylen, struct jupyter_msg *m);

/*
 * jupyter_msg_from_json - build *m from an object {"msg_type", "msg_id",
 * "parent_id", "content"} (the fallback kernel's line format).  Borrows obj
 * only during the call.  Returns 0, -EBADMSG, -ENOMEM.
 */
int jupyter_msg_from_json(const json_t *obj, struct jupyter_msg *m);

/* jupyter_msg_clear - free the parts of m and zero it.  NULL-safe. */
void jupyter_msg_clear(struct jupyter_msg *m);

/* jupyter_new_id - a fresh random UUID4 string into out.  0 or -errno. */
int jupyter_new_id(char out[JUPYTER_ID_SIZE]);

/*
 * The frames of one message to send from a DEALER (no identities):
 * delimiter, signature, then the four JSON parts.  Owned; clear with
 * jupyter_wire_clear.
 */
struct jupyter_wire {
	char *part[4];          /* header, parent_header, metadata, content */
	size_t len[4];
	char sig[JUPYTER_SIG_SIZE];
	char msg_id[JUPYTER_ID_SIZE];
};

/*
 * jupyter_msg_encode - a request of msg_type with content (borrowed; NULL
 * is {}) for session, with a fresh msg_id, the date now, an empty parent
 * header and metadata, signed with key.  Returns 0 and fills *w, or
 * -EINVAL, -ENOMEM, -EIO.
 */
int jupyter_msg_encode(const char *session, const char *msg_type,
		       const json_t *content, const void *key, size_t keylen,
		       struct jupyter_wire *w);

/* jupyter_wire_clear - free the parts of w.  NULL-safe. */
void jupyter_wire_clear(struct jupyter_wire *w);

#endif
