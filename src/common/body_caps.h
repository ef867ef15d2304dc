/*
 * body_caps.h - the REST API's caps on request fields, in one place for the
 * daemon, which enforces them (daemon/http/request_body.c answers 400 beyond
 * them), and the CLI, which checks its input against them before sending.
 * docs/api.md documents each.  Bytes unless said otherwise.  Also the
 * rule of names (body_check_name) and the form of a sandbox id, which the
 * daemon's bodies, routes, options and the cluster's records share.
 */
#ifndef PANDASTACK_COMMON_BODY_CAPS_H
#define PANDASTACK_COMMON_BODY_CAPS_H

#define BODY_NAME_MAX 64             /* key names, teams, template names */
#define BODY_CMD_MAX (64 * 1024)     /* exec cmd (the agent takes < 128 KiB) */
#define BODY_STDIN_MAX (1024 * 1024) /* exec stdin */
#define BODY_CODE_MAX (1024 * 1024)  /* run_code code (python; shell: BODY_CMD_MAX) */
#define BODY_PATH_MAX 4095           /* guest paths */
#define BODY_ENV_MAX_VARS 128
#define BODY_ENV_NAME_MAX 256
#define BODY_ENV_VALUE_MAX (32 * 1024)
#define BODY_ENV_MAX_BYTES (256 * 1024) /* names + values of one env object */
#define BODY_META_MAX_KEYS 32
#define BODY_META_KEY_MAX 64
#define BODY_META_VALUE_MAX 512
#define BODY_TIMEOUT_MAX_S 86400 /* seconds: exec and run_code timeout_seconds */
#define BODY_SNAPSHOT_NAME_MAX 128 /* a snapshot's name (printable UTF-8) */
#define BODY_FORK_MAX 16           /* forks of one request */

/* Sandbox ids: "sbx_" + SBX_ID_HEX lowercase hex digits. */
#define SBX_ID_HEX 20

/* sandbox_id_valid - 1 if s has the form of a sandbox id, else 0.  Pure;
 * any thread. */
int sandbox_id_valid(const char *s);

/*
 * body_check_name - a template, team, key or node name: 1..BODY_NAME_MAX
 * bytes of [a-z0-9._-], starting with a letter or digit.  Returns 0 or
 * -EINVAL.  Pure; any thread.
 */
int body_check_name(const char *s);

#endif
