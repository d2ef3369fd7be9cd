/* Consumer of the installed C API (cupmon/cupmon.h, libcupmon.so). Without a GPU cupmon_start must
 * fail cleanly: -1 and a message. Prints "start failed: MESSAGE" or "started"; exits 0 unless the
 * API misbehaves. */
#include <cupmon/cupmon.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  cupmon_config config;
  cupmon_config_init(&config);
  if (config.struct_size != sizeof(config)) {
    fprintf(stderr, "struct_size %u, expected %zu\n", config.struct_size, sizeof(config));
    return 1;
  }
  if (argc > 1) config.output_dir = argv[1];
  if (cupmon_start(&config) != 0) {
    const char* message = cupmon_last_error();
    if (message == NULL || message[0] == '\0') {
      fprintf(stderr, "cupmon_start failed without a message\n");
      return 1;
    }
    printf("start failed: %s\n", message);
    return 0;
  }
  cupmon_stats stats;
  memset(&stats, 0, sizeof(stats));
  if (cupmon_get_stats(&stats) != 0 || stats.running != 1 || cupmon_stop() != 0) {
    fprintf(stderr, "running monitor: %s\n", cupmon_last_error());
    return 1;
  }
  printf("started\n");
  return 0;
}
