"""The chaos campaign's worker: runs for CHAOS_RUN_S seconds of "training" and exits 0.

Marks its start (CHAOS_DIR/started.<restart>.<rank>, holding its pid) so the campaign knows
when every worker of an attempt runs. SIGUSR1 makes it exit with the code written in
CHAOS_DIR/exit_code (the "worker exits N" fault). With CHAOS_TORCH=1 it is a real PyTorch
Gloo job: init_process_group from torchrun's environment, then all_reduce steps, so a lost
peer is seen the way a training job sees it. A rank named in CHAOS_DIR/fail_again exits 3 at
once in every attempt after the first (the no_progress fault). It beats no steps, except with
CHAOS_PACE_S set (the straggler fault): then it beats a step every CHAOS_PACE_S seconds, 3x
as long while CHAOS_DIR/slow names its node's address, until CHAOS_DIR/stop exists.
"""
import os
import signal
import sys
import time


def exit_on_request(signum, frame):
    with open(os.path.join(os.environ["CHAOS_DIR"], "exit_code")) as f:
        code = int(f.read())
    sys.stdout.flush()
    os._exit(code)


def paced(pace_s):
    """Beats a step every pace_s seconds, 3x as long while this node is the slow one, until
    the stop mark."""
    chaos = os.environ["CHAOS_DIR"]
    node = os.environ["DDPRUN_AGENT_ID"].rsplit(":", 1)[0]
    slow, stop = os.path.join(chaos, "slow"), os.path.join(chaos, "stop")
    beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1)
    step = 0
    while not os.path.exists(stop):
        print(step, file=beat)
        step += 1
        slowed = os.path.exists(slow) and open(slow).read() == node
        time.sleep(pace_s * (3 if slowed else 1))  # the step's work
    return 0


def main():
    signal.signal(signal.SIGUSR1, exit_on_request)
    rank = int(os.environ["RANK"])
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    run_s = float(os.environ.get("CHAOS_RUN_S", "3"))
    use_torch = os.environ.get("CHAOS_TORCH") == "1"
    fail_again = os.path.join(os.environ["CHAOS_DIR"], "fail_again")
    if restart != "0" and os.path.exists(fail_again) and open(fail_again).read() == str(rank):
        return 3  # the no_progress fault: this rank fails at once in every later attempt
    if use_torch:
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
    mark = os.path.join(os.environ["CHAOS_DIR"], "started.%s.%d" % (restart, rank))
    with open(mark + ".tmp", "w") as f:
        f.write("%d %s %s" % (os.getpid(), os.environ["DDPRUN_AGENT_ID"], os.environ["LOCAL_RANK"]))
    os.rename(mark + ".tmp", mark)  # complete when visible
    if os.environ.get("CHAOS_PACE_S"):
        return paced(float(os.environ["CHAOS_PACE_S"]))
    steps = max(1, int(run_s / 0.05))  # the same count on every rank: collectives pair up
    for step in range(steps):
        if use_torch:
            t = torch.ones(1024)
            dist.all_reduce(t)
            if t[0].item() != float(os.environ["WORLD_SIZE"]):
                print("rank %d: wrong all_reduce result %f" % (rank, t[0].item()))
                return 5
        time.sleep(0.05)  # the workload itself: a training step's worth of waiting
    print("rank %d: %d steps done" % (rank, steps))
    if use_torch:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
