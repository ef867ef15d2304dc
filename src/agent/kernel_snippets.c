/*
 * kernel_snippets.c - the Python the agent runs in a kernel on its own
 * behalf (silently, as internal jobs): warm-up, reseed, and the setup of a
 * taken spare for its new owner (its env and cwd, when they differ).  Each defines a function, calls it and deletes
 * it, leaving the user's namespace as it was.  They run unchanged on
 * ipykernel and on the fallback kernel.  Pure; any thread.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/kernel_int.h"
#include "common/util.h"

/* Imports pandas, numpy and pyplot, switches on the inline backend, and
 * renders a figure and a DataFrame once so fonts and formatters load. */
static const char warmup_src[] =
	"def __pandastack_warm():\n"
	"    import importlib, io\n"
	"    for m in ('numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'):\n"
	"        try:\n"
	"            importlib.import_module(m)\n"
	"        except Exception:\n"
	"            pass\n"
	"    try:\n"
	"        get_ipython().run_line_magic('matplotlib', 'inline')\n"
	"    except Exception:\n"
	"        pass\n"
	"    try:\n"
	"        from matplotlib.figure import Figure\n"
	"        fig = Figure(figsize=(1, 1))\n"
	"        fig.add_subplot().plot([0, 1])\n"
	"        fig.savefig(io.BytesIO(), format='png')\n"
	"    except Exception:\n"
	"        pass\n"
	"    try:\n"
	"        import pandas\n"
	"        pandas.DataFrame({'a': [1]})._repr_html_()\n"
	"    except Exception:\n"
	"        pass\n"
	"__pandastack_warm()\n"
	"del __pandastack_warm\n";

/* Python's random and numpy's legacy global generator from os.urandom
 * (the kernel RNG was reseeded by the restore op before this runs). */
static const char reseed_src[] =
	"def __pandastack_reseed():\n"
	"    import os, random, sys\n"
	"    random.seed(os.urandom(32))\n"
	"    np = sys.modules.get('numpy')\n"
	"    if np is not None:\n"
	"        try:\n"
	"            np.random.seed([int.from_bytes(os.urandom(4), 'little') for _ in range(8)])\n"
	"        except Exception:\n"
	"            pass\n"
	"__pandastack_reseed()\n"
	"del __pandastack_reseed\n";

char *kernel__code_warmup(void)
{
	return strdup(warmup_src);
}

char *kernel__code_reseed(void)
{
	return strdup(reseed_src);
}

/* The setup travels as hex-encoded JSON, so no value can break the code.
 * No reseed here: every kernel reseeds at restore (kernel_reseed_all). */
char *kernel__code_setup(const char *cwd, char *const *env_added)
{
	json_t *env = json_object();
	for (size_t i = 0; env && env_added && env_added[i]; i++) {
		const char *eq = strchr(env_added[i], '=');
		if (!eq)
			continue;
		char *key = strndup(env_added[i], (size_t)(eq - env_added[i]));
		if (!key || json_object_set_new(env, key, json_string(eq + 1)) < 0) {
			free(key);
			json_decref(env);
			return NULL;
		}
		free(key);
	}
	json_t *doc = env ? json_pack("{s:o, s:s?}", "env", env, "cwd", cwd) : NULL;
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!text)
		return NULL;
	size_t tl = strlen(text);
	char *hex = malloc(2 * tl + 1);
	if (!hex) {
		free(text);
		return NULL;
	}
	util_hex(text, tl, hex);
	free(text);
	char *code = NULL;
	if (asprintf(&code,
		     "def __pandastack_setup():\n"
		     "    import json, os\n"
		     "    d = json.loads(bytes.fromhex('%s').decode())\n"
		     "    os.environ.update(d['env'])\n"
		     "    if d.get('cwd'):\n"
		     "        os.chdir(d['cwd'])\n"
		     "__pandastack_setup()\n"
		     "del __pandastack_setup\n",
		     hex) < 0)
		code = NULL;
	free(hex);
	return code;
}
