"""torchrun 2.9-2.15's options through the real ddprun and agent, where they change what
workers do or what the console shows: --log-line-prefix-template (and its TORCHELASTIC_
variable), --duplicate-std{out,err}-filters, --numa-binding on this machine's topology and on
a fake sysfs tree (DDPRUN_SYSFS; CPU affinity and the worker's memory policy as the kernel
shows it in /proc/self/numa_maps), --virtual-local-rank without GPUs, --print-completion
bash."""
import glob
import os
import re
import socket
import subprocess
import sys
import unittest

import launcher_helpers as h

# Prints its rank, a line to filter and one not to, a stderr warning, and its CPU affinity.
WORKER = r"""
import os, sys
rank = os.environ["RANK"]
print(f"hello {rank}")
print(f"loss {rank}")
print(f"WARN {rank}", file=sys.stderr)
with open("/proc/self/status") as f:
    cpus = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list:")][0]
print(f"cpus {os.environ['LOCAL_RANK']} {rank} {cpus} {os.environ.get('CUDA_VISIBLE_DEVICES')}")
if os.path.exists("/proc/self/numa_maps"):  # the task's policy shows on every mapping
    with open("/proc/self/numa_maps") as f:
        print(f"mempolicy {rank} {f.readline().split()[1]}")
"""


def cpu_set(text):
    out = set()
    for item in text.strip().split(","):
        if not item:
            continue
        lo, _, hi = item.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


class TorchrunOptionsTest(h.LauncherTestCase):
    def run_workers(self, args, env_extra=None, nproc=2):
        script = os.path.join(self.dir, "worker.py")
        with open(script, "w") as f:
            f.write(WORKER)
        result = self.run_ddprun(["--nproc-per-node", str(nproc), *args, script], env_extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    @staticmethod
    def cpus_lines(stdout):
        """(LOCAL_RANK, RANK, Cpus_allowed_list, CUDA_VISIBLE_DEVICES) of each worker."""
        return [m.groups() for m in re.finditer(r"cpus (\S+) (\S+) (\S+) (\S+)$", stdout, re.M)]

    def mempolicy(self, stdout):
        """{rank: policy} from the workers' `mempolicy` lines (numa_maps' word: prefer:0)."""
        if not os.path.exists("/proc/self/numa_maps"):
            raise unittest.SkipTest("no /proc/self/numa_maps: a kernel without NUMA")
        return {int(r): p for r, p in re.findall(r"mempolicy (\S+) (\S+)$", stdout, re.M)}

    @staticmethod
    def mems_allowed():
        with open("/proc/self/status") as f:
            return cpu_set([l.split()[1] for l in f if l.startswith("Mems_allowed_list:")][0])

    def affinity(self, stdout):
        """{rank: cpu set} from the workers' `cpus` lines."""
        return {int(rank): cpu_set(cpus) for _, rank, cpus, _ in self.cpus_lines(stdout)}

    def test_prefix_template_expands_every_macro_per_worker(self):
        host = socket.gethostname()
        result = self.run_workers(["--role", "trainer", "--log-line-prefix-template",
                                   "<${role_name}|${local_rank}|${rank}|${hostname}|${x}> "])
        for rank in (0, 1):
            self.assertIn(f"<trainer|{rank}|{rank}|{host}|${{x}}> hello {rank}\n", result.stdout)
        # The TORCHELASTIC_ variable is the fallback; the option wins over it.
        result = self.run_workers([], {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[r${rank}] "})
        self.assertIn("[r1] hello 1\n", result.stdout)
        result = self.run_workers(["--log_line_prefix_template=#"],
                                  {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[r${rank}] "})
        self.assertIn("#hello 1\n", result.stdout)

    def test_duplicate_filters_copy_teed_lines_into_the_attempt_dir(self):
        logs = os.path.join(self.dir, "logs")
        self.run_workers(["--tee", "0:3", "--log-dir", logs, "--duplicate-stdout-filters",
                          "loss,nothing", "--duplicate_stderr_filters", "WARN"])
        [out] = glob.glob(os.path.join(logs, "**", "filtered_stdout.log"), recursive=True)
        [err] = glob.glob(os.path.join(logs, "**", "filtered_stderr.log"), recursive=True)
        with open(out) as f:
            self.assertEqual(f.read(), "[default0]:loss 0\n")  # rank 1 is not teed
        with open(err) as f:
            self.assertEqual(f.read(), "[default0]:WARN 0\n")

    def test_numa_binding_node_on_this_machine(self):
        allowed = os.sched_getaffinity(0)
        nodes = []  # (node, its allowed CPUs)
        for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*/cpulist"),
                           key=lambda p: int(p.split("/node")[-1].split("/")[0])):
            with open(path) as f:
                cpus = cpu_set(f.read()) & allowed
            if cpus:
                nodes.append((int(path.split("/node")[-1].split("/")[0]), cpus))
        if not nodes:
            nodes = [(0, allowed)]
        result = self.run_workers(["--numa-binding", "node"])
        # No GPUs here: rank r of 2 on node r * len(nodes) // 2 (docs/launcher.md).
        expected = {r: nodes[r * len(nodes) // 2] for r in (0, 1)}
        self.assertEqual(self.affinity(result.stdout), {r: c for r, (_, c) in expected.items()},
                         result.stdout + result.stderr)
        # Memory prefers the rank's node (never binds): numa_maps says prefer:<node>.
        self.assertEqual(self.mempolicy(result.stdout),
                         {r: f"prefer:{n}" for r, (n, _) in expected.items()},
                         result.stdout + result.stderr)
        # Without --numa-binding the policy stays the default.
        self.assertEqual(self.mempolicy(self.run_workers([]).stdout),
                         {0: "default", 1: "default"})

    def fake_sysfs(self, cpus):
        """One NUMA node per CPU in `cpus`, each its own socket, core and L3."""
        root = os.path.join(self.dir, "sys")
        for node, cpu in enumerate(cpus):
            files = {
                f"devices/system/node/node{node}/cpulist": str(cpu),
                f"devices/system/cpu/cpu{cpu}/topology/physical_package_id": str(node),
                f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list": str(cpu),
                f"devices/system/cpu/cpu{cpu}/cache/index3/type": "Unified",
                f"devices/system/cpu/cpu{cpu}/cache/index3/level": "3",
                f"devices/system/cpu/cpu{cpu}/cache/index3/shared_cpu_list": str(cpu),
            }
            for name, text in files.items():
                path = os.path.join(root, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text + "\n")
        return root

    def test_numa_binding_on_a_fake_tree_binds_each_worker_to_its_node(self):
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            self.skipTest("needs two CPUs this process may run on")
        cpus = allowed[:2]
        sysfs = self.fake_sysfs(cpus)
        for mode in ("node", "socket", "exclusive", "core-complex"):
            result = self.run_workers(["--numa-binding", mode], {"DDPRUN_SYSFS": sysfs})
            self.assertEqual(self.affinity(result.stdout), {0: {cpus[0]}, 1: {cpus[1]}},
                             mode + ": " + result.stdout + result.stderr)
            # Rank r is on fake node r: preferred when the kernel lets ddprun allocate there
            # (it has such a node), else the default policy rather than a failed worker.
            mems = self.mems_allowed()
            self.assertEqual(self.mempolicy(result.stdout),
                             {r: f"prefer:{r}" if r in mems else "default" for r in (0, 1)},
                             mode + ": " + result.stdout + result.stderr)
        result = self.run_ddprun(["--numa-binding", "node", *self.marker_command()],
                                 {"DDPRUN_SYSFS": os.path.join(self.dir, "nowhere")})
        self.assert_usage_error(result, "--numa-binding: cannot read")

    def test_virtual_local_rank_without_gpus(self):
        result = self.run_workers(["--virtual-local-rank"])
        # Every worker: LOCAL_RANK 0; CUDA_VISIBLE_DEVICES its own local rank (torchrun's).
        self.assertEqual(sorted((l, r, d) for l, r, _, d in self.cpus_lines(result.stdout)),
                         [("0", "0", "0"), ("0", "1", "1")])

    def test_print_completion_bash_completes_options_and_values(self):
        script = self.run_ddprun(["--print-completion", "bash"])
        self.assertEqual(script.returncode, 0, script.stderr)

        def complete(*words):
            program = (script.stdout + "\nCOMP_WORDS=(" + " ".join(f"'{w}'" for w in words) +
                       ")\nCOMP_CWORD=" + str(len(words) - 1) +
                       "\n_ddprun\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
            done = subprocess.run(["bash", "-c", program], capture_output=True, text=True,
                                  timeout=h.DEADLINE_S, cwd=self.dir)
            self.assertEqual(done.returncode, 0, done.stderr)
            return set(done.stdout.split())

        self.assertEqual(complete("ddprun", "--numa-b"), {"--numa-binding"})
        self.assertEqual(complete("ddprun", "--numa-binding", "e"), {"exclusive"})
        self.assertEqual(complete("ddprun", "--print_completion", ""), {"bash", "zsh", "tcsh"})
        self.assertIn("--duplicate-stdout-filters", complete("ddprun", "--dup"))


if __name__ == "__main__":
    h.DDPRUN = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
