#!/usr/bin/env bash
# A write through Linux native AIO (io_submit, IOCB_CMD_PWRITE: what
# databases and some build tools use, often with O_DIRECT) raises no
# IN_MODIFY: a full scan sees the new content, a monitored checkpoint keeps
# the old. (Needs gcc to build the 20-line writer.)
. "$(dirname "$0")/lib.sh"
command -v gcc >/dev/null || { echo "needs gcc"; exit 0; }
cat > "$T/aio.c" <<'C'
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
int main(int c, char **v) {
	aio_context_t ctx = 0;
	if (syscall(SYS_io_setup, 8, &ctx)) { perror("io_setup"); return 1; }
	int fd = open(v[1], O_WRONLY);
	if (fd < 0) { perror("open"); return 1; }
	static char buf[8] = "AIOAIO\n";
	struct iocb cb; memset(&cb, 0, sizeof cb);
	cb.aio_fildes = fd; cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_buf = (unsigned long)buf; cb.aio_nbytes = 7; cb.aio_offset = 0;
	struct iocb *cbs[1] = {&cb};
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1) { perror("io_submit"); return 1; }
	struct io_event ev;
	syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL);
	return ev.res == 7 ? 0 : 1;
}
C
gcc -o "$T/aiow" "$T/aio.c" || exit 2
snapc init >/dev/null
mkdir -p a; echo original > a/f
start_watch
ck >/dev/null; [ "$(ck)" = monitored ] || { echo "no monitored checkpoint" >&2; exit 2; }
"$T/aiow" a/f || exit 2
echo "a/f now: $(head -1 a/f); checkpoint: $(ck)"
verify
