/*
 * fuzz_engine_files.c - the engine's file parsers against arbitrary
 * contents: an image manifest (images/<name>.json), a template.json and a
 * sandbox's vm.json.  Each must be refused with an error, never crash.
 * Files go to a folder under /tmp made once per process, removed at exit.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "engine/template/manifest.h"
#include "engine/template/template.h"
#include "engine/vm/vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz_engine_files_XXXXXX";
static char images[PATH_MAX], tdir[PATH_MAX], rdir[PATH_MAX];

static void cleanup(void)
{
	util_rm_rf(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX + 32], err[512];
	if (!images[0]) {
		if (!mkdtemp(dir))
			return 0;
		atexit(cleanup);
		snprintf(images, sizeof(images), "%s/images", dir);
		snprintf(tdir, sizeof(tdir), "%s/templates/fz", dir);
		snprintf(rdir, sizeof(rdir), "%s/run", dir);
		util_mkdir_p(images, 0755);
		util_mkdir_p(tdir, 0755);
		util_mkdir_p(rdir, 0755);
	}
	if (size > 300000)
		return 0;
	snprintf(path, sizeof(path), "%s/fz.json", images);
	util_write_file(path, data, size, 0644);
	struct manifest *m = malloc(sizeof(*m));
	if (m) {
		manifest_load(dir, "fz", m, err, sizeof(err));
		free(m);
	}
	snprintf(path, sizeof(path), "%s/template.json", tdir);
	util_write_file(path, data, size, 0644);
	struct template *t = NULL;
	if (template_open(dir, "fz", ACCEL_TCG, &t, err, sizeof(err)) == 0)
		template_free(t);
	snprintf(path, sizeof(path), "%s/vm.json", rdir);
	util_write_file(path, data, size, 0644);
	struct vm *v = NULL;
	struct vm_err verr;
	if (vm_adopt(rdir, 10, &v, &verr) == 0)
		vm_free(v);
	return 0;
}
