/*
 * body_caps.h - the REST API's caps on request fields, in one place for the
 * daemon, which enforces them (daemon/request_body.c answers 400 beyond
 * them), and the CLI, which checks its input against them before sending.
 * docs/api.md documents each.  Bytes unless said otherwise.
 *
 * Header only: constants, no code.
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

#endif
