/* A syscall-heavy workload for the tracing-overhead benchmark: stat, open,
 * read and close small page-cached files as fast as possible, then print the
 * elapsed time of the loop itself (so tool start-up is not counted). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: syscall_loop DIR ITERATIONS\n");
    return 2;
  }
  const char* dir = argv[1];
  const long iterations = atol(argv[2]);
  char path[4096], buf[8192];
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < iterations; i++) {
    snprintf(path, sizeof path, "%s/f%03ld", dir, i % 100);
    struct stat st;
    if (stat(path, &st) != 0) return 1;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 1;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("elapsed_s %.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
  return 0;
}
