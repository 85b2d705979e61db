/* --csv's file: opened so that a FIFO nobody reads is refused rather than
 * waited on and the file stdout goes to is written through stdout, and
 * closed saying whether every write to it succeeded. */
#include "bench_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks.h"

int report_csv_open(bench *b)
{
  const char *path = b->opts->csv;
  /* Open first, then look at what was opened: no window between a look
   * and an open. O_NONBLOCK makes a FIFO without a reader fail at once;
   * O_TRUNC is left for regular files only (below). */
  int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    print_error("cannot write --csv %s: %s\n", path,
                errno == ENXIO ? "a FIFO that no process has open for reading"
                               : strerror(errno));
    return 0;
  }
  struct stat file, out;
  if (fstat(fd, &file) != 0) {
    print_error("cannot write --csv %s: fstat: %s\n", path, strerror(errno));
    close(fd);
    return 0;
  }
  if (fstat(STDOUT_FILENO, &out) == 0 && file.st_dev == out.st_dev &&
      file.st_ino == out.st_ino) {
    /* A second open of stdout's file would write from its start, over the
     * table: write through stdout instead. */
    close(fd);
    b->csv = stdout;
    b->csv_is_stdout = 1;
    return 1;
  }
  if ((S_ISREG(file.st_mode) && ftruncate(fd, 0) != 0) ||
      fcntl(fd, F_SETFL, 0) != 0) {
    print_error("cannot write --csv %s: %s\n", path, strerror(errno));
    close(fd);
    return 0;
  }
  b->csv = fdopen(fd, "w");
  if (b->csv == NULL) {
    print_error("cannot write --csv %s: %s\n", path, strerror(errno));
    close(fd);
    return 0;
  }
  return 1;
}

int report_csv_close(bench *b)
{
  if (b->csv == NULL)
    return 1;
  int err = b->csv_errno;
  if ((b->csv_is_stdout ? fflush(b->csv) : fclose(b->csv)) != 0 && err == 0)
    err = errno;
  b->csv = NULL;
  if (err)
    print_error("writing --csv %s failed: %s\n", b->opts->csv, strerror(err));
  return err == 0;
}
