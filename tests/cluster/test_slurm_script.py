"""docs/cluster.md's Slurm job script, run as written by bash with stand-ins for `srun` and
`scontrol` on PATH (nothing is trained: the stand-in srun records its arguments and exits
with the status it is told): a worker that lost a peer (exit 75) or a killed task requeues
the job, at most 3 times; the requeued job, `--resume`d, finishes with exit 0. And the
page's table of environment variables names every one the code reads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from repo_paths import REPO_ROOT

from actrec.cluster.restarts import is_restartable
from actrec.errors import RESTART_EXIT_CODE

CLUSTER_PAGE = REPO_ROOT / "docs" / "cluster.md"
MARKER = "<!-- slurm-job-script -->"
JOB_ID = "4242"

# The stand-in srun exits with the next status of its list (one a line), then 0.
STAND_IN_SRUN = """#!/bin/bash
printf '%s\\n' "$*" >> "$STAND_IN_DIR/srun.calls"
status=$(head -n 1 "$STAND_IN_DIR/statuses" 2>/dev/null)
sed -i 1d "$STAND_IN_DIR/statuses" 2>/dev/null
exit "${status:-0}"
"""
STAND_IN_SCONTROL = """#!/bin/bash
printf '%s\\n' "$*" >> "$STAND_IN_DIR/scontrol.calls"
"""


def slurm_job_script() -> str:
    """The bash block after the page's `<!-- slurm-job-script -->` marker."""
    text = CLUSTER_PAGE.read_text(encoding="utf-8")
    assert text.count(MARKER) == 1, f"{CLUSTER_PAGE}: one {MARKER} before the job script"
    block = re.match(r"\s*```bash\n(.*?)```", text.split(MARKER)[1], flags=re.DOTALL)
    assert block, f"{CLUSTER_PAGE}: a ```bash block right after {MARKER}"
    return block[1]


@pytest.fixture
def job(tmp_path):
    """Runs the job script as sbatch would, once per call: (exit status, srun calls,
    scontrol calls) of that run; `statuses` are the stand-in srun's exit statuses."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("srun", STAND_IN_SRUN), ("scontrol", STAND_IN_SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "train.sh"
    script.write_text(slurm_job_script())

    def run(statuses: list[int], restart_count: int | None = None):
        (tmp_path / "statuses").write_text("".join(f"{s}\n" for s in statuses))
        for calls in ("srun.calls", "scontrol.calls"):
            (tmp_path / calls).unlink(missing_ok=True)
        environment = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "STAND_IN_DIR": str(tmp_path),
            "SLURM_JOB_ID": JOB_ID,
            "SLURM_NNODES": "2",
            "SLURM_NTASKS": "8",
        }
        if restart_count is not None:
            environment["SLURM_RESTART_COUNT"] = str(restart_count)
        result = subprocess.run(
            [shutil.which("bash"), str(script)],
            env=environment,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
        )

        def lines(name):
            path = tmp_path / name
            return path.read_text().splitlines() if path.exists() else []

        return result.returncode, lines("srun.calls"), lines("scontrol.calls")

    return run


def test_the_script_asks_slurm_for_requeues_and_resumes():
    script = slurm_job_script()
    assert script.startswith("#!/bin/bash\n")
    assert re.search(r"^#SBATCH .*--requeue\b", script, flags=re.MULTILINE)
    srun = re.search(r"^srun actrec train .*", script.replace("\\\n", " "), flags=re.MULTILINE)
    assert srun and "--resume" in srun[0].split()


def test_a_lost_worker_requeues_the_job_and_the_requeued_job_finishes(job):
    status, srun_calls, scontrol_calls = job([RESTART_EXIT_CODE])
    assert scontrol_calls == [f"requeue {JOB_ID}"]
    assert status == RESTART_EXIT_CODE
    [call] = srun_calls
    assert call.split()[:2] == ["actrec", "train"] and call.split()[-1] == "--resume"

    # Slurm starts the requeued job with SLURM_RESTART_COUNT=1: the same command, now 0.
    status, srun_calls, scontrol_calls = job([], restart_count=1)
    assert (status, scontrol_calls) == (0, [])
    assert srun_calls == [call]


@pytest.mark.parametrize("srun_status", [0, 1, 2, RESTART_EXIT_CODE, 130, 137, 143])
def test_the_script_requeues_what_launch_restarts(job, srun_status):
    """The job script requeues on the statuses `actrec launch --restarts` restarts on
    (actrec.cluster.restarts.is_restartable), and exits with srun's status."""
    status, _, scontrol_calls = job([srun_status])
    assert status == srun_status
    assert scontrol_calls == ([f"requeue {JOB_ID}"] if is_restartable(srun_status) else [])


def test_the_requeues_end_after_three(job):
    for count in (1, 2):
        assert job([RESTART_EXIT_CODE], restart_count=count)[2] == [f"requeue {JOB_ID}"]
    status, _, scontrol_calls = job([RESTART_EXIT_CODE], restart_count=3)
    assert (status, scontrol_calls) == (RESTART_EXIT_CODE, [])


ENVIRONMENT_NAME = re.compile(r"""["']((?:ACTREC|TF|SLURM|RAY|CUDA|KERAS)_[A-Z0-9_]+)["']""")


def test_the_environment_table_names_every_variable_the_code_reads():
    """Every environment variable named by a string in actrec/ or cli/ has a row in
    docs/cluster.md's "Environment variables" table."""
    text = CLUSTER_PAGE.read_text(encoding="utf-8")
    table = text.split("## Environment variables", 1)[1]
    documented = set(re.findall(r"^\|\s*(`[A-Z].*?)\s*\|", table, flags=re.MULTILINE))
    documented = {name for row in documented for name in re.findall(r"`([A-Z0-9_]+)`", row)}
    in_code = {
        name
        for folder in ("actrec", "cli")
        for path in (REPO_ROOT / folder).rglob("*.py")
        for name in ENVIRONMENT_NAME.findall(path.read_text(encoding="utf-8"))
    }
    assert {"TF_CONFIG", "ACTREC_SLURM_PORT", "ACTREC_PRETRAINED"} <= in_code
    assert not in_code - documented, f"not in docs/cluster.md: {sorted(in_code - documented)}"
