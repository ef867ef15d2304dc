/*
 * pandastack-engine - the engine's operator tool.
 *
 *   pandastack-engine [--cache DIR] [--accel auto|kvm|tcg] COMMAND
 *     bake NAME [--force]  bake one template from <cache>/images/NAME.json
 *     bake-all [--force]   bake every template that has a manifest and is
 *                          missing or stale (what `make templates` runs)
 *     smoke [NAME]         create a sandbox from NAME (code-interpreter),
 *                          run python -c 'print(2**10)', print it, stop
 *     accel                print the accelerator choice and why
 *
 * --cache defaults to $PANDASTACK_CACHE, else /var/cache/pandastack.
 * Exit status: 0 ok, 1 failure, 100 usage (s6 convention).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "engine/guest/guest_run.h"
#include "engine/paths.h"
#include "engine/qemu/accel.h"
#include "engine/template/manifest.h"
#include "engine/template/template.h"
#include "engine/vm/bake.h"
#include "engine/vm/vm.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: pandastack-engine [--cache DIR] [--accel auto|kvm|tcg] COMMAND\n"
		"  bake NAME [--force]   bake one template\n"
		"  bake-all [--force]    bake every missing or stale template\n"
		"  smoke [NAME]          create a sandbox, run python, stop\n"
		"  accel                 print the accelerator choice and why\n");
}

static void print_progress(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
	fflush(stdout);
}

static int resolve(enum accel_kind want, enum accel_kind *got)
{
	char why[320];
	int r = accel_resolve(want, got, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "pandastack-engine: %s\n", why);
		return r;
	}
	return 0;
}

static int cmd_bake(const char *cache, enum accel_kind accel, const char *name, int force)
{
	char err[512];
	enum accel_kind got;
	if (resolve(accel, &got) < 0)
		return 1;
	int r = template_bake(cache, name, got, force, print_progress, NULL, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "pandastack-engine: bake %s failed: %s\n", name, err[0] ? err : strerror(-r));
		return 1;
	}
	return 0;
}

static int cmd_bake_all(const char *cache, enum accel_kind accel, int force)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s/images", cache) >= (int)sizeof(dir))
		return 1;
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "pandastack-engine: %s: %s (run `make images`)\n", dir, strerror(errno));
		return 1;
	}
	char names[64][MANIFEST_NAME_MAX];
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 64) {
		size_t len = strlen(de->d_name);
		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0 || len - 5 >= MANIFEST_NAME_MAX)
			continue;
		memcpy(names[n], de->d_name, len - 5);
		names[n][len - 5] = '\0';
		if (manifest_name_ok(names[n]))
			n++;
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "pandastack-engine: no manifests in %s (run `make images`)\n", dir);
		return 1;
	}
	int failed = 0;
	for (int i = 0; i < n; i++)
		if (cmd_bake(cache, accel, names[i], force) != 0)
			failed++;
	return failed ? 1 : 0;
}

static int cmd_smoke(const char *cache, enum accel_kind accel, const char *name)
{
	char err[512], base[] = "/tmp/pandastack-smoke-XXXXXX", run[PATH_MAX];
	enum accel_kind got;
	if (resolve(accel, &got) < 0)
		return 1;
	struct template *t = NULL;
	int r = template_open(cache, name, got, &t, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "pandastack-engine: template %s: %s\n", name, err[0] ? err : strerror(-r));
		return 1;
	}
	if (!mkdtemp(base)) {
		template_free(t);
		return 1;
	}
	snprintf(run, sizeof(run), "%s/vm", base);
	struct vm *v = NULL;
	struct vm_err verr;
	int64_t t0 = util_now_ms();
	r = vm_restore(t, run, NULL, 60000, &v, &verr);
	int64_t t1 = util_now_ms();
	if (r < 0) {
		fprintf(stderr, "pandastack-engine: create failed: %s\n", verr.msg);
		rmdir(base);
		template_free(t);
		return 1;
	}
	printf("created from %s in %lld ms (pid %d)\n", name, (long long)(t1 - t0), (int)vm_pid(v));
	struct guest_run_result res;
	struct guest_run_exec_opts o = {.timeout_ms = 60000};
	r = guest_run_exec(vm_agent(v), "python -c 'print(2**10)'", &o, &res);
	int64_t t2 = util_now_ms();
	int ok = r == 0 && res.exit_code == 0 && res.out && !strcmp(res.out, "1024\n");
	if (r == 0) {
		printf("python -c 'print(2**10)' -> %s", res.out);
		printf("exit %d in %lld ms%s%s\n", res.exit_code, (long long)(t2 - t1),
		       res.err_len ? ", stderr: " : "", res.err_len ? res.err : "");
	} else {
		fprintf(stderr, "pandastack-engine: exec failed: %s\n", strerror(-r));
	}
	guest_run_result_free(&res);
	vm_stop(v);
	vm_free(v);
	rmdir(base);
	template_free(t);
	printf("smoke %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}

static int cmd_accel(enum accel_kind want)
{
	char why[320];
	enum accel_kind got;
	int r = accel_resolve(want, &got, why, sizeof(why));
	printf("%s (%s)\n", r == 0 ? accel_name(got) : "none", why);
	return r == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *cache_flag = NULL;
	enum accel_kind accel = ACCEL_AUTO;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--cache") && i + 1 < argc) {
			cache_flag = argv[++i];
		} else if (!strcmp(argv[i], "--accel") && i + 1 < argc) {
			if (accel_parse(argv[++i], &accel) < 0) {
				usage();
				return 100;
			}
		} else {
			usage();
			return 100;
		}
	}
	if (i >= argc) {
		usage();
		return 100;
	}
	const char *cache = engine_cache_dir(cache_flag);
	const char *cmd = argv[i++];
	int force = 0;
	const char *arg = NULL;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			force = 1;
		else if (!strcmp(argv[i], "--cache") && i + 1 < argc)
			cache = argv[++i];
		else if (!arg && argv[i][0] != '-')
			arg = argv[i];
		else {
			usage();
			return 100;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "bake") && arg)
		return cmd_bake(cache, accel, arg, force);
	if (!strcmp(cmd, "bake-all") && !arg)
		return cmd_bake_all(cache, accel, force);
	if (!strcmp(cmd, "smoke"))
		return cmd_smoke(cache, accel, arg ? arg : "code-interpreter");
	if (!strcmp(cmd, "accel") && !arg)
		return cmd_accel(accel);
	usage();
	return 100;
}
