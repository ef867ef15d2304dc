/*
 * paths.h - where the engine keeps its files on the host: the cache folder
 * of guest images, templates and the jail's work files.  Pure apart from
 * reading the environment; any thread.
 */
#ifndef PANDASTACK_ENGINE_PATHS_H
#define PANDASTACK_ENGINE_PATHS_H

/* Default cache folder; PANDASTACK_CACHE or a flag overrides it. */
#define ENGINE_DEFAULT_CACHE "/var/cache/pandastack"

/*
 * engine_cache_dir - the cache folder to use: flag (may be NULL), else
 * $PANDASTACK_CACHE, else ENGINE_DEFAULT_CACHE.  Returns a borrowed string.
 */
const char *engine_cache_dir(const char *flag);

#endif
