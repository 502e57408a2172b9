"""A test worker for ddprun's agent integration tests. No torch: starts in milliseconds.

usage: worker.py OUTDIR MODE [ARGS]
Every worker writes OUTDIR/a<attempt>_r<rank>.json with its environment and pid first,
then behaves as MODE says:
  ok                 exit 0
  env                exit 0 after printing a line to stdout and a partial line to stderr
  fail_once RANK     attempt 0: RANK exits 1 once the others are running; else exit 0
  exit RANK CODE     RANK exits CODE once every worker started; the others wait
  teardown           rank 0 exits 1 once the others are ready; rank 1 waits (dies on
                     SIGTERM); rank 2 ignores SIGTERM and waits (needs SIGKILL)
  wait               wait forever; on SIGTERM, SIGHUP or SIGUSR1 write
                     OUTDIR/sig<signum>_r<rank> and exit 0
  ignore_int         ignore SIGINT and wait forever
  grandchild         start a grandchild `sleep 1000` in our group and one in a new session,
                     write their pids, then wait forever
  errorfile RANK CODE  RANK writes TORCHELASTIC_ERROR_FILE itself (as a C worker would)
                     and exits CODE once every worker started
  selfkill RANK      RANK kills itself with SIGKILL once every worker started
  stray              attempt 0: rank 0 starts `sleep 1000` in a new session and exits 1;
                     attempt 1: rank 0 writes OUTDIR/stray_result = whether it still lives
  output             binary bytes and a partial last line on stdout, exit 0
"""
import json
import os
import signal
import subprocess
import sys
import time

DEADLINE_S = 30.0


def rank():
    return int(os.environ["RANK"])


def attempt():
    return int(os.environ["TORCHELASTIC_RESTART_COUNT"])


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, path)


def wait_for_files(paths):
    """Waits (deadline) for sibling workers to announce themselves; polls the file system
    because sibling workers share nothing else."""
    end = time.monotonic() + DEADLINE_S
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > end:
            sys.exit(99)
        time.sleep(0.01)  # a poll interval between checks of sibling files


def all_started(outdir):
    world = int(os.environ["WORLD_SIZE"])
    wait_for_files([os.path.join(outdir, "a%d_r%d.json" % (attempt(), r)) for r in range(world)])


def process_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def wait_forever():
    while True:
        signal.pause()


def main():
    outdir, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    # Handlers first: the record below tells the test (and siblings) we are ready.
    if mode == "teardown" and rank() == 2:
        def ignore(signum, frame):
            open(os.path.join(outdir, "ignored_term_r2"), "w").close()
        signal.signal(signal.SIGTERM, ignore)
    if mode == "wait":
        def on_signal(signum, frame):
            open(os.path.join(outdir, "sig%d_r%d" % (signum, rank())), "w").close()
            os._exit(0)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, on_signal)
    if mode == "ignore_int":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    me = {"pid": os.getpid(), "pgid": os.getpgid(0), "env": dict(os.environ)}
    write_json(os.path.join(outdir, "a%d_r%d.json" % (attempt(), rank())), me)
    if mode == "ok":
        return 0
    if mode == "env":
        print("hello from rank %d" % rank())
        sys.stderr.write("partial from rank %d" % rank())
        return 0
    if mode == "fail_once":
        if attempt() == 0 and rank() == int(args[0]):
            all_started(outdir)
            return 1
        return 0
    if mode in ("exit", "errorfile", "selfkill"):
        target = int(args[0])
        if rank() != target:
            wait_forever()
        all_started(outdir)
        if mode == "selfkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "errorfile":
            write_json(os.environ["TORCHELASTIC_ERROR_FILE"], {
                "message": "CUDA out of memory in layer 7 (written by a C worker)",
                "timestamp": str(int(time.time()))})
        return int(args[1])
    if mode == "teardown":
        if rank() == 0:
            all_started(outdir)
            return 1
        wait_forever()
    if mode in ("wait", "ignore_int"):
        wait_forever()
    if mode == "grandchild":
        same = subprocess.Popen(["sleep", "1000"])
        escaped = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        write_json(os.path.join(outdir, "kids_r%d.json" % rank()),
                   {"same_group": same.pid, "new_session": escaped.pid})
        wait_forever()
    if mode == "stray":
        stray_file = os.path.join(outdir, "stray_pid")
        if attempt() == 0:
            if rank() == 0:
                stray = subprocess.Popen(["sleep", "1000"], start_new_session=True)
                write_json(stray_file, stray.pid)
                return 1
            wait_forever()
        if rank() == 0:
            with open(stray_file) as f:
                pid = json.load(f)
            end = time.monotonic() + DEADLINE_S
            while process_alive(pid) and time.monotonic() < end:
                time.sleep(0.01)  # poll interval while the agent's SIGKILL lands
            write_json(os.path.join(outdir, "stray_result"), process_alive(pid))
        return 0
    if mode == "output":
        sys.stdout.buffer.write(b"bin\x00\xff\xfeary\nno newline at end")
        sys.stdout.flush()
        return 0
    sys.stderr.write("unknown mode %s\n" % mode)
    return 98


if __name__ == "__main__":
    sys.exit(main())
