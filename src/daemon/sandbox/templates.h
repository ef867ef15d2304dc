/*
 * templates.h - the daemon's view of the template cache: loaded templates
 * (template_open) with their pools of pre-started QEMU processes
 * (pool_new), the list GET /v1/templates shows, and background bakes for
 * POST /v1/templates/{name}/build.
 *
 * A loaded template is handed out with a reference (templates_get /
 * templates_put) so a rebuild can retire it while creates still use it: the
 * retired template and its pool are freed when the last reference goes,
 * and the next get loads the new bake.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef PANDASTACK_DAEMON_TEMPLATES_H
#define PANDASTACK_DAEMON_TEMPLATES_H

#include <stddef.h>

#include <jansson.h>

#include "daemon/config.h"
#include "engine/qemu/accel.h"
#include "engine/template/template.h"
#include "engine/vm/pool.h"

struct templates;
struct tpl;

/*
 * templates_new - a cache reading cache_dir (templates under
 * <cache_dir>/templates) whose pools of ready sandboxes live under
 * pool_dir/<name>, each of the size cfg gives that template
 * (config_pool_size_of; 0: none).  Strings are copied; cfg is borrowed and
 * must outlive ts.  Returns 0 with *out or -errno.
 */
int templates_new(const char *cache_dir, const char *pool_dir, enum accel_kind accel,
		  const struct daemon_cfg *cfg, struct templates **out);

/* templates_free - stop bakes' bookkeeping (a running bake finishes in its
 * thread first), free every pool and template.  NULL is a no-op. */
void templates_free(struct templates *ts);

/* templates_load_all - load every baked template and start its pool
 * (failures are logged; the template then shows its error in the list). */
void templates_load_all(struct templates *ts);

/*
 * templates_get - the loaded template name with a reference (loading it
 * now if needed).  A loaded template whose bake was replaced on disk since
 * (template_changed_on_disk: `make templates` beside the daemon) is retired
 * first, as after an API build, and the new bake loaded: its pool starts
 * once the old one's has ended.  Returns 0 with *out, -ENOENT (not baked),
 * -ESTALE (baked for another QEMU or machine), -EINVAL (bad
 * template.json); err gets the engine's message.
 */
int templates_get(struct templates *ts, const char *name, struct tpl **out, char *err,
		  size_t errlen);

/* templates_put - drop a reference from templates_get.  NULL is a no-op. */
void templates_put(struct tpl *t);

/* tpl_template - the engine's template (borrowed while referenced). */
const struct template *tpl_template(struct tpl *t);

/* tpl_pool - its pool, or NULL when pools are off or failed to start. */
struct pool *tpl_pool(struct tpl *t);

/*
 * templates_list_json - a new JSON array of template objects:
 * {"name", "status": "ready"|"missing"|"stale"|"invalid",
 *  "vcpus", "memory_mib", "pool_ready", "error", "build": {"status":
 *  "running"|"succeeded"|"failed", ...}|null} (docs/openapi.yaml, Template).
 * NULL when out of memory.
 */
json_t *templates_list_json(struct templates *ts);

/* templates_status_json - the same object for one name, or NULL. */
json_t *templates_status_json(struct templates *ts, const char *name);

/*
 * templates_build_start - bake name in a background thread (template_bake
 * with force).  Returns 0 (started), -EBUSY (a bake of name runs), -ENOENT
 * (no image recipe <cache>/images/<name>.json), -errno.
 */
int templates_build_start(struct templates *ts, const char *name, int force);

#endif
