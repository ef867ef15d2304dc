/*
 * paths.c - where the engine keeps its files (see paths.h).
 */
#include "engine/paths.h"

#include <stdlib.h>

const char *engine_cache_dir(const char *flag)
{
	if (flag && flag[0])
		return flag;
	const char *env = getenv("PANDASTACK_CACHE");
	if (env && env[0])
		return env;
	return ENGINE_DEFAULT_CACHE;
}
