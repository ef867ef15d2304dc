/*
 * test_snapshot_pages.c - the capture's page work (engine/vm/snapshot_pages.c)
 * on a real process: a child maps a "template" memfd privately, as QEMU maps
 * a template's RAM, writes some pages and waits; snap_capture_pages must
 * store exactly the pages that differ from the base image (the template's
 * RAM, then a first capture over it), with their bytes; a process that is
 * gone fails the capture cleanly.  engine_copy_nonzero (how a template's
 * memfd is filled) is checked on the way.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/vm/snapshot_int.h"

#define RAM_PAGES 16384u /* 64 MiB */
#define RAM_BYTES ((uint64_t)RAM_PAGES * SNAP_PAGE)

/* The template: every third page non-zero (its own fill byte). */
static int tpl_nonzero_page(uint64_t p)
{
	return p % 3 == 0;
}

static unsigned char tpl_byte(uint64_t p)
{
	return (unsigned char)((p & 0x7f) | 1);
}

/* Phase 1 of the child's writes, and what a capture over the template
 * must keep of them. */
static void child_phase1(unsigned char *ram)
{
	memset(ram + 1 * SNAP_PAGE, 0xaa, SNAP_PAGE);          /* zero page -> data: kept */
	memset(ram + 2 * SNAP_PAGE, 0x55, SNAP_PAGE);          /* zero -> data -> zero: not */
	memset(ram + 2 * SNAP_PAGE, 0, SNAP_PAGE);
	ram[3 * SNAP_PAGE + 100] ^= 0xff;                      /* non-zero page changed: kept */
	ram[6 * SNAP_PAGE] = tpl_byte(6);                      /* same bytes again: not */
	for (uint64_t p = 4000; p < 7000; p++)                 /* one long run: kept */
		memset(ram + p * SNAP_PAGE, (int)(p % 251) + 1, 64);
	for (uint64_t p = 8000; p < 12000; p += 2)             /* 2000 separate runs: kept */
		ram[p * SNAP_PAGE + 4095] = 0x42;
}

static int kept_phase1(uint64_t p)
{
	return p == 1 || p == 3 || (p >= 4000 && p < 7000) || (p >= 8000 && p < 12000 && p % 2 == 0);
}

/* Phase 2, after the first capture; what a capture over it must keep. */
static void child_phase2(unsigned char *ram)
{
	memset(ram + 1 * SNAP_PAGE, 0xaa, SNAP_PAGE);          /* as captured: not */
	ram[3 * SNAP_PAGE + 200] ^= 0xff;                      /* changed again: kept */
	memset(ram + 9 * SNAP_PAGE, 0, SNAP_PAGE);             /* non-zero page zeroed: kept */
	memset(ram + 10 * SNAP_PAGE, 0x11, 8);                 /* a new page: kept */
	memset(ram + 4000 * SNAP_PAGE, (int)(4000 % 251) + 1, 64); /* as captured: not */
}

static int kept_phase2(uint64_t p)
{
	return p == 3 || p == 9 || p == 10;
}

struct child {
	pid_t pid;
	int go, ready; /* our ends */
	uint64_t start;
};

/* The child: map fd privately, then for each byte read from go do the next
 * phase and answer on ready. */
static void child_main(int fd, int go, int ready)
{
	unsigned char *ram = mmap(NULL, RAM_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (ram == MAP_FAILED)
		_exit(1);
	char c;
	for (int phase = 1; read(go, &c, 1) == 1; phase++) {
		if (phase == 1)
			child_phase1(ram);
		else
			child_phase2(ram);
		if (write(ready, "k", 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static void child_step(struct child *ch)
{
	char c = 'g';
	assert_int_equal(write(ch->go, &c, 1), 1);
	assert_int_equal(read(ch->ready, &c, 1), 1);
}

/* A new empty file, already unlinked. */
static int temp_file(void)
{
	char path[] = "/tmp/test-snapshot-mem-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* The template memfd from a sparse file through engine_copy_nonzero. */
static int make_template(void)
{
	int in = temp_file();
	assert_int_equal(ftruncate(in, (off_t)RAM_BYTES), 0);
	unsigned char page[SNAP_PAGE];
	uint64_t want = 0;
	for (uint64_t p = 0; p < RAM_PAGES; p++) {
		if (!tpl_nonzero_page(p))
			continue;
		memset(page, tpl_byte(p), sizeof(page));
		assert_int_equal(pwrite(in, page, sizeof(page), (off_t)(p * SNAP_PAGE)), SNAP_PAGE);
		want++;
	}
	memset(page, 0, sizeof(page)); /* a data extent of zeros: not copied */
	assert_int_equal(pwrite(in, page, sizeof(page), 5 * SNAP_PAGE), SNAP_PAGE);
	int fd = engine_memfd_new("test-template", RAM_BYTES);
	assert_true(fd >= 0);
	uint64_t copied = 0;
	assert_int_equal(engine_copy_nonzero(in, fd, (off_t)RAM_BYTES, &copied), 0);
	close(in);
	assert_int_equal(copied, want * SNAP_PAGE);
	assert_int_equal(engine_memfd_seal(fd), 0);
	return fd;
}

static void child_start(struct child *ch, int tpl_fd)
{
	int go[2], ready[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (ch->pid == 0) {
		close(go[1]);
		close(ready[0]);
		child_main(tpl_fd, go[0], ready[1]);
	}
	close(go[0]);
	close(ready[1]);
	ch->go = go[1];
	ch->ready = ready[0];
}

static void child_end(struct child *ch)
{
	close(ch->go);
	close(ch->ready);
	kill(ch->pid, SIGKILL);
	waitpid(ch->pid, NULL, 0);
}

/* A child on template fd, through its first phase, its RAM found; our own
 * read-only mapping of the template (mapped after the fork, which the
 * child would inherit and snap_find_ram would then see twice). */
static const unsigned char *start_with_template(struct child *ch, int fd)
{
	child_start(ch, fd);
	const unsigned char *tpl = mmap(NULL, RAM_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(tpl != MAP_FAILED);
	child_step(ch);
	assert_int_equal(snap_find_ram(ch->pid, RAM_BYTES, &ch->start), 0);
	return tpl;
}

/* Capture ch over base into a new memory file; returns its descriptor. */
static int capture(const struct child *ch, const struct snapshot *base,
		   const unsigned char *tpl, struct snap_pages_stats *st)
{
	int fd = temp_file();
	assert_int_equal(snap_capture_pages(ch->pid, ch->start, RAM_BYTES, base, tpl, fd, 0, st), 0);
	return fd;
}

/* Load fd as a level over parent; checks the file on the way. */
static struct snapshot *load_level(int fd, const struct snapshot *parent)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->mem_file = fd;
	s->mem_fd = -1;
	s->ram_bytes = RAM_BYTES;
	s->parent = parent;
	assert_int_equal(snap_level_load(s), 0);
	return s;
}

static void free_level(struct snapshot *s)
{
	snap_level_free(s);
	close(s->mem_file);
	free(s);
}

/* The level holds exactly the pages kept() says, each with the child's
 * bytes now. */
static void assert_level(const struct child *ch, struct snapshot *s, int (*kept)(uint64_t))
{
	unsigned char *mine = malloc(SNAP_PAGE), *theirs = malloc(SNAP_PAGE);
	assert_non_null(mine);
	assert_non_null(theirs);
	uint64_t n = 0, data = snap_mem_data_off(RAM_BYTES);
	for (uint64_t p = 0; p < RAM_PAGES; p++) {
		int held = (int)((s->present[p / 64] >> (p % 64)) & 1);
		if (held != kept(p))
			fail_msg("page %llu: held %d, want %d", (unsigned long long)p, held, kept(p));
		if (!held)
			continue;
		struct iovec l = {theirs, SNAP_PAGE};
		struct iovec r = {(void *)(uintptr_t)(ch->start + p * SNAP_PAGE), SNAP_PAGE};
		assert_int_equal(process_vm_readv(ch->pid, &l, 1, &r, 1, 0), SNAP_PAGE);
		assert_int_equal(pread(s->mem_file, mine, SNAP_PAGE, (off_t)(data + n * SNAP_PAGE)),
				 SNAP_PAGE);
		assert_memory_equal(mine, theirs, SNAP_PAGE);
		n++;
	}
	assert_int_equal(n, s->npages);
	free(mine);
	free(theirs);
}

static void test_capture_over_template_and_level(void **state)
{
	(void)state;
	int fd = make_template();
	struct child ch;
	const unsigned char *tpl = start_with_template(&ch, fd);

	/* Over the template. */
	struct snap_pages_stats st;
	struct snapshot *l1 = load_level(capture(&ch, NULL, tpl, &st), NULL);
	assert_level(&ch, l1, kept_phase1);
	assert_int_equal(l1->incomplete, 0);
	assert_int_equal(st.stored_pages, l1->npages);
	assert_true(st.private_pages > st.stored_pages); /* pages 2 and 6 were compared */

	/* Over the first capture: only what changed since. */
	child_step(&ch);
	struct snapshot *l2 = load_level(capture(&ch, l1, tpl, &st), l1);
	assert_level(&ch, l2, kept_phase2);
	/* Positive control: over the template alone, the pages that equal the
	 * first capture are kept too (page 1 among them). */
	struct snapshot *l2t = load_level(capture(&ch, NULL, tpl, &st), NULL);
	assert_true(l2t->npages > l2->npages);
	assert_true((l2t->present[0] >> 1) & 1);
	free_level(l2t);
	free_level(l2);
	free_level(l1);
	child_end(&ch);
	munmap((void *)tpl, RAM_BYTES);
	close(fd);
}

/* A warm-up pass (the VM still running) leaves the file incomplete; the
 * paused pass after it rewrites the same file into exactly what a single
 * pass writes, cutting what the warm-up wrote past its end. */
static void test_warmup_then_capture(void **state)
{
	(void)state;
	int fd = make_template();
	struct child ch;
	const unsigned char *tpl = start_with_template(&ch, fd);
	struct snap_pages_stats st;
	struct snapshot *l1 = load_level(capture(&ch, NULL, tpl, &st), NULL);
	child_step(&ch);
	int out = temp_file();
	assert_int_equal(snap_mem_write_empty(out, RAM_BYTES, SNAP_MEM_INCOMPLETE), 0);
	/* Over the template the warm-up writes more pages than the pass over
	 * l1 keeps. */
	assert_int_equal(snap_capture_pages(ch.pid, ch.start, RAM_BYTES, NULL, tpl, out,
					    SNAP_CAPTURE_WARMUP, &st), 0);
	uint64_t warm_pages = st.stored_pages;
	struct stat sb;
	assert_int_equal(fstat(out, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, snap_mem_data_off(RAM_BYTES) + warm_pages * SNAP_PAGE);
	/* Cut here (a crash), the file is no level at all: its header still
	 * says incomplete with no page, and the warm-up's pages follow it. */
	struct snapshot w = {.mem_file = out, .mem_fd = -1, .ram_bytes = RAM_BYTES};
	assert_int_equal(snap_level_load(&w), -EINVAL);
	assert_int_equal(snap_capture_pages(ch.pid, ch.start, RAM_BYTES, l1, tpl, out, 0, &st), 0);
	assert_true(st.stored_pages < warm_pages);
	struct snapshot *l2 = load_level(out, l1);
	assert_int_equal(l2->incomplete, 0);
	assert_level(&ch, l2, kept_phase2);
	free_level(l2);
	free_level(l1);
	child_end(&ch);
	munmap((void *)tpl, RAM_BYTES);
	close(fd);
}

/* A VM that is gone fails the capture with an error, not a memory file. */
static void test_capture_of_gone_process(void **state)
{
	(void)state;
	int fd = make_template();
	struct child ch;
	const unsigned char *tpl = start_with_template(&ch, fd);
	pid_t pid = ch.pid;
	child_end(&ch); /* killed and reaped */
	int out = temp_file();
	struct snap_pages_stats st;
	int r = snap_capture_pages(pid, ch.start, RAM_BYTES, NULL, tpl, out, 0, &st);
	assert_true(r == -ENOENT || r == -ESRCH);
	assert_int_equal(snap_find_ram(pid, RAM_BYTES, &ch.start), -ENOENT);
	close(out);
	munmap((void *)tpl, RAM_BYTES);
	close(fd);
}

/* A memory file made empty and incomplete loads as such (no pages, never
 * restored); a capture's own is whole; unknown flags are refused. */
static void test_incomplete_memory_file(void **state)
{
	(void)state;
	int fd = temp_file();
	assert_int_equal(snap_mem_write_empty(fd, RAM_BYTES, SNAP_MEM_INCOMPLETE), 0);
	struct snapshot *s = load_level(fd, NULL);
	assert_int_equal(s->npages, 0);
	assert_int_equal(s->incomplete, 1);
	snap_level_free(s);
	free(s);
	/* Past pages written beyond the header are cut off. */
	unsigned char page[SNAP_PAGE] = {1};
	assert_int_equal(pwrite(fd, page, sizeof(page), (off_t)snap_mem_data_off(RAM_BYTES)),
			 SNAP_PAGE);
	assert_int_equal(snap_mem_write_empty(fd, RAM_BYTES, 0), 0);
	s = load_level(fd, NULL);
	assert_int_equal(s->incomplete, 0);
	snap_level_free(s);
	free(s);
	/* A flag this code does not know. */
	unsigned char two = 2;
	assert_int_equal(pwrite(fd, &two, 1, 24), 1);
	struct snapshot *bad = calloc(1, sizeof(*bad));
	assert_non_null(bad);
	bad->mem_file = fd;
	bad->ram_bytes = RAM_BYTES;
	assert_int_equal(snap_level_load(bad), -EINVAL);
	snap_level_free(bad);
	free(bad);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_over_template_and_level),
		cmocka_unit_test(test_warmup_then_capture),
		cmocka_unit_test(test_capture_of_gone_process),
		cmocka_unit_test(test_incomplete_memory_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
