/*
 * gssapi_absent.c - failing definitions of the GSS-API symbols that
 * Debian's static libzmq.a references.
 *
 * Why: the agent is linked statically (it is PID 1 in an initramfs with no
 * shared libraries).  libzmq.a is built with GSSAPI support, so it refers to
 * the MIT Kerberos GSS-API, but Debian ships no static libgssapi_krb5.  libzmq
 * only calls these functions when a socket enables the GSSAPI security
 * mechanism (ZMQ_GSSAPI_SERVER / ZMQ_GSSAPI_CLIENT), which the agent never
 * does.  Every function here therefore fails with GSS_S_FAILURE and touches
 * nothing but its minor status; the name-type OIDs point at empty OIDs.
 * Should one ever be reached, the ZMQ handshake fails cleanly instead of the
 * process crashing.
 *
 * Threads: any (no state).
 */
#include <gssapi/gssapi.h>

static gss_OID_desc absent_oid = {0, 0};

gss_OID GSS_C_NT_USER_NAME = &absent_oid;
gss_OID GSS_C_NT_HOSTBASED_SERVICE = &absent_oid;

/* Set the minor status (when given) and report failure. */
static OM_uint32 absent(OM_uint32 *minor)
{
	if (minor)
		*minor = 0;
	return GSS_S_FAILURE;
}

OM_uint32 KRB5_CALLCONV gss_acquire_cred(OM_uint32 *minor, gss_name_t name, OM_uint32 time_req,
					 gss_OID_set mechs, gss_cred_usage_t usage,
					 gss_cred_id_t *cred, gss_OID_set *actual,
					 OM_uint32 *time_rec)
{
	(void)name, (void)time_req, (void)mechs, (void)usage, (void)actual, (void)time_rec;
	if (cred)
		*cred = GSS_C_NO_CREDENTIAL;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_release_cred(OM_uint32 *minor, gss_cred_id_t *cred)
{
	(void)cred;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_init_sec_context(OM_uint32 *minor, gss_cred_id_t cred,
					     gss_ctx_id_t *ctx, gss_name_t target,
					     gss_OID mech, OM_uint32 req_flags,
					     OM_uint32 time_req,
					     gss_channel_bindings_t bindings,
					     gss_buffer_t input, gss_OID *actual_mech,
					     gss_buffer_t output, OM_uint32 *ret_flags,
					     OM_uint32 *time_rec)
{
	(void)cred, (void)ctx, (void)target, (void)mech, (void)req_flags, (void)time_req;
	(void)bindings, (void)input, (void)actual_mech, (void)ret_flags, (void)time_rec;
	if (output) {
		output->length = 0;
		output->value = 0;
	}
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_accept_sec_context(OM_uint32 *minor, gss_ctx_id_t *ctx,
					       gss_cred_id_t cred, gss_buffer_t input,
					       gss_channel_bindings_t bindings,
					       gss_name_t *src_name, gss_OID *mech,
					       gss_buffer_t output, OM_uint32 *ret_flags,
					       OM_uint32 *time_rec, gss_cred_id_t *delegated)
{
	(void)ctx, (void)cred, (void)input, (void)bindings, (void)src_name, (void)mech;
	(void)ret_flags, (void)time_rec, (void)delegated;
	if (output) {
		output->length = 0;
		output->value = 0;
	}
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_delete_sec_context(OM_uint32 *minor, gss_ctx_id_t *ctx,
					       gss_buffer_t output)
{
	(void)ctx, (void)output;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_wrap(OM_uint32 *minor, gss_ctx_id_t ctx, int conf_req,
				 gss_qop_t qop, gss_buffer_t input, int *conf_state,
				 gss_buffer_t output)
{
	(void)ctx, (void)conf_req, (void)qop, (void)input, (void)conf_state, (void)output;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_unwrap(OM_uint32 *minor, gss_ctx_id_t ctx, gss_buffer_t input,
				   gss_buffer_t output, int *conf_state, gss_qop_t *qop)
{
	(void)ctx, (void)input, (void)output, (void)conf_state, (void)qop;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_display_name(OM_uint32 *minor, gss_name_t name,
					 gss_buffer_t output, gss_OID *type)
{
	(void)name, (void)output, (void)type;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_import_name(OM_uint32 *minor, gss_buffer_t input, gss_OID type,
					gss_name_t *name)
{
	(void)input, (void)type;
	if (name)
		*name = GSS_C_NO_NAME;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_release_name(OM_uint32 *minor, gss_name_t *name)
{
	(void)name;
	return absent(minor);
}

OM_uint32 KRB5_CALLCONV gss_release_buffer(OM_uint32 *minor, gss_buffer_t buffer)
{
	(void)buffer;
	return absent(minor);
}
