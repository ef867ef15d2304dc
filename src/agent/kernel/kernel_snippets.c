/*
 * kernel_snippets.c - the Python the agent runs in a kernel on its own
 * behalf (silently, as internal jobs): warm-up, reseed (with the
 * after-restore functions, kernel_restore.c), and the setup of a
 * taken spare for its new owner (its env and cwd, when they differ).  Each
 * defines a function, calls it and deletes it, leaving the user's namespace
 * as it was.  They run unchanged on
 * ipykernel and on the fallback kernel.  Pure; any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/kernel/kernel_int.h"
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

/*
 * After a restore: Python's random, numpy's legacy global generator and
 * OpenSSL's generator from os.urandom (the kernel RNG was reseeded by the
 * restore op before this runs).  OpenSSL: _ssl.RAND_add reseeds its primary
 * generator (with fresh bytes from the kernel as well as these), and each
 * thread's public and private generators reseed from it at their next use
 * (they follow the primary's reseed count); it runs only where libcrypto is
 * loaded (_ssl or _hashlib imported, or mapped by another module), so a
 * kernel that never used OpenSSL does not load it.  With a sandbox id (a
 * restore that hands the sandbox out): PANDASTACK_SANDBOX_ID in os.environ,
 * then the functions registered with pandastack_restore, in order (its
 * _run_after_restore raises when one of them failed).  Between head and
 * tail: the call, with the id as a Python literal or None.
 */
static const char reseed_head[] =
	"def __pandastack_reseed(sid):\n"
	"    import os, random, sys\n"
	"    random.seed(os.urandom(32))\n"
	"    np = sys.modules.get('numpy')\n"
	"    if np is not None:\n"
	"        try:\n"
	"            np.random.seed([int.from_bytes(os.urandom(4), 'little') for _ in range(8)])\n"
	"        except Exception:\n"
	"            pass\n"
	"    crypto = '_ssl' in sys.modules or '_hashlib' in sys.modules\n"
	"    if not crypto:\n"
	"        try:\n"
	"            with open('/proc/self/maps') as f:\n"
	"                crypto = 'libcrypto' in f.read()\n"
	"        except OSError:\n"
	"            pass\n"
	"    if crypto:\n"
	"        try:\n"
	"            import _ssl\n"
	"        except ImportError:\n"
	"            _ssl = None\n"
	"        if _ssl is not None:\n"
	"            _ssl.RAND_add(os.urandom(64), 64.0)\n"
	"    if sid is not None:\n"
	"        os.environ['PANDASTACK_SANDBOX_ID'] = sid\n"
	"        hooks = sys.modules.get('pandastack_restore')\n"
	"        if hooks is not None:\n"
	"            hooks._run_after_restore()\n"
	"try:\n";
static const char reseed_tail[] =
	"finally:\n"
	"    del __pandastack_reseed\n";

char *kernel__code_warmup(void)
{
	return strdup(warmup_src);
}

char *kernel__code_reseed(const char *sandbox_id)
{
	char lit[KERNEL_SANDBOX_ID_MAX + 3] = "None";
	if (sandbox_id) {
		size_t n = strlen(sandbox_id);
		if (n == 0 || n > KERNEL_SANDBOX_ID_MAX ||
		    strspn(sandbox_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "0123456789_-") != n)
			return NULL;
		snprintf(lit, sizeof(lit), "'%s'", sandbox_id);
	}
	char *code = NULL;
	if (asprintf(&code, "%s    __pandastack_reseed(%s)\n%s", reseed_head, lit, reseed_tail) < 0)
		return NULL;
	return code;
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
