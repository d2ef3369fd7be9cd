/* TEST STUB of libcupmon.so for the Python module's tests: NOT the monitor. It implements the C API of
 * monitor/include/cupmon/cupmon.h with canned behaviour and records what it was given, so the tests
 * can check the ctypes marshalling end to end without CUDA. Built by python/tests/test_cupmon.py:
 *   -DSTUB_WITH_WINDOWS   also export cupmon_window_* and cupmon_annotation_*
 *   -DSTUB_SMALL_CONFIG   report a struct_size smaller than the real cupmon_config (a mismatch) */
#include <stdio.h>
#include <string.h>

#include "cupmon/cupmon.h"

static cupmon_config g_config;
static char g_output_dir[512], g_kinds[512], g_encoding[64];
static char g_log[4096];
static const char* g_error = "";
static int g_running;
static int g_started_ever;

static void Log(const char* entry) {
  strncat(g_log, entry, sizeof(g_log) - strlen(g_log) - 2);
  strncat(g_log, ";", sizeof(g_log) - strlen(g_log) - 1);
}

static void Copy(char* dst, size_t n, const char* src) { snprintf(dst, n, "%s", src ? src : "(null)"); }

void cupmon_config_init(cupmon_config* config) {
  memset(config, 0, sizeof(*config));
#ifdef STUB_SMALL_CONFIG
  config->struct_size = 8;
#else
  config->struct_size = sizeof(*config);
#endif
  config->flush_ms = 1000;
}

int cupmon_start(const cupmon_config* config) {
  Log("start");
  if (g_running) { g_error = "stub: already running"; return -1; }
  if (config->output_dir && strcmp(config->output_dir, "/fail") == 0) {
    g_error = "stub: refused /fail";
    return -1;
  }
  g_config = *config;
  Copy(g_output_dir, sizeof(g_output_dir), config->output_dir);
  Copy(g_kinds, sizeof(g_kinds), config->kinds);
  Copy(g_encoding, sizeof(g_encoding), config->encoding);
  g_running = 1;
  g_started_ever = 1;
  return 0;
}

int cupmon_stop(void) {
  Log("stop");
  if (!g_running) { g_error = "stub: not running"; return -1; }
  g_running = 0;
  return 0;
}

int cupmon_flush(void) {
  Log("flush");
  if (!g_running) { g_error = "stub: not running"; return -1; }
  return 0;
}

int cupmon_get_stats(cupmon_stats* stats) {
  if (!g_started_ever) { g_error = "stub: never started"; return -1; }
  memset(stats, 0, sizeof(*stats));
  stats->records = 123;
  stats->raw_bytes = 1ull << 40;
  stats->dropped_records = 7;
  stats->strings = 99;
  stats->running = (uint32_t)g_running;
  stats->reserved = 0xdeadbeef;
  return 0;
}

const char* cupmon_last_error(void) { return g_error; }

#ifdef STUB_WITH_WINDOWS
/* Fills like an older library that knows only up to lost_records, so the module must read `filled`. */
int cupmon_get_stats_sized(cupmon_stats_sized* stats, size_t size) {
  cupmon_stats_sized full;
  size_t n = offsetof(cupmon_stats_sized, lost_kernel_records);
  if (cupmon_get_stats(&full.base) != 0) return -1;
  full.filled = size < n ? size : n;
  full.lost_buffers = 2;
  full.lost_records = 5000;
  memcpy(stats, &full, full.filled);
  return 0;
}

int cupmon_window_open(uint32_t duration_ms, const char* kinds) {
  char entry[600];
  snprintf(entry, sizeof(entry), "window_open %u %s", duration_ms, kinds ? kinds : "(null)");
  Log(entry);
  if (!g_running) { g_error = "stub: not running"; return -1; }
  return 41;
}
int cupmon_window_close(void) { Log("window_close"); return 0; }
int cupmon_annotation_push(const char* label) {
  char entry[600];
  snprintf(entry, sizeof(entry), "push %s", label);
  Log(entry);
  return 0;
}
int cupmon_annotation_pop(void) { Log("pop"); return 0; }
#endif

/* Read back by the tests. */
const cupmon_config* stub_config(void) { return &g_config; }
const char* stub_output_dir(void) { return g_output_dir; }
const char* stub_kinds(void) { return g_kinds; }
const char* stub_encoding(void) { return g_encoding; }
const char* stub_log(void) { return g_log; }
