"""deploy/: scripts parse and run end to end on one machine; the Compose file and the Kubernetes
manifests are well-formed and every command they run is one the CLI accepts (parsed with the
CLI's own parser), with images, volumes and the job file consistent. No cluster is needed."""

import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from dask_kernels import open_store
from dask_kernels.cli import build_parser
from dask_kernels.cli.run import load_job, steps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
SCRIPTS = ["local_job.sh", "featurize_job.sh", "start_scheduler.sh", "start_workers.sh", "slurm_featurize.sbatch"]


def _yaml(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return list(yaml.safe_load_all(f))


def _parse_dask_kernels(argv, env=None):
    """argv of a `dask-kernels ...` command parsed by the CLI (SystemExit on a bad one)."""
    assert argv[0] == "dask-kernels", argv
    argv = [a.replace("$(DASK_SCHEDULER_ADDRESS)", "tcp://10.0.0.1:8786") for a in argv[1:]]
    return build_parser().parse_args(argv)


def _parse_dask(argv):
    """`dask scheduler|worker ...` checked against distributed's own click commands."""
    from distributed.cli.dask_scheduler import main as scheduler
    from distributed.cli.dask_worker import main as worker

    assert argv[0] == "dask" and argv[1] in ("scheduler", "worker"), argv
    cmd = {"scheduler": scheduler, "worker": worker}[argv[1]]
    args = [a.replace("$(DASK_WORKER_NAME)", "w-0") for a in argv[2:]]
    cmd.make_context(cmd.name, args)  # raises click.UsageError on an unknown option


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_parse_and_never_race_the_scheduler_file(script):
    path = os.path.join(DEPLOY, script)
    subprocess.run(["bash", "-n", path], check=True)
    text = open(path).read()
    assert "python -c" not in text  # the old read-the-file-after-a-loop race
    if "dask-kernels" in text:
        assert "--scheduler-file" in text


def test_local_job_runs_featurize_end_to_end(tmp_path):
    X = np.random.default_rng(0).random((200, 4))
    np.save(tmp_path / "X.npy", X)
    bindir = os.path.dirname(sys.executable)
    assert shutil.which("dask-kernels", path=bindir) and shutil.which("dask", path=bindir)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"], "WORKERS": "1", "TMPDIR": str(tmpdir)}
    proc = subprocess.run([os.path.join(DEPLOY, "featurize_job.sh"), str(tmp_path / "X.npy"),
                           str(tmp_path / "f.zarr"), "--param", "n_components=16", "--block-rows", "50"],
                          capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "4 computed, 0 already done" in proc.stdout
    assert open_store(str(tmp_path / "f.zarr")).complete
    # the run folder (scheduler file, logs) is removed on exit
    assert not [n for n in os.listdir(tmpdir) if n.startswith("tmp.")]


def test_compose_file():
    (doc,) = _yaml("compose.yaml")
    services = doc["services"]
    assert set(services) == {"scheduler", "worker", "job"}
    images = {s["image"] for s in services.values()}
    assert len(images) == 1  # one environment everywhere
    build = services["scheduler"]["build"]
    assert os.path.isfile(os.path.join(DEPLOY, build["context"], build["dockerfile"]))
    _parse_dask(services["scheduler"]["command"])
    _parse_dask(services["worker"]["command"])
    job = services["job"]["command"]
    args = _parse_dask_kernels(job)
    assert args.command == "run"
    # the file the scheduler writes is the one the job and the workers wait for, on a shared volume
    sched = services["scheduler"]["command"]
    sched_file = sched[sched.index("--scheduler-file") + 1]
    assert args.scheduler_file == sched_file
    worker = services["worker"]["command"]
    assert worker[worker.index("--scheduler-file") + 1] == sched_file
    shared = os.path.dirname(sched_file)
    for name in ("scheduler", "worker", "job"):
        assert any(v.split(":")[1] == shared for v in services[name]["volumes"]), name
    # the job file it mounts is valid and its steps parse
    mount = next(v for v in services["job"]["volumes"] if v.split(":")[1] == args.job)
    job_file = os.path.join(DEPLOY, mount.split(":")[0])
    for _, argv, _ in steps(load_job(job_file), ["--scheduler-file", sched_file]):
        build_parser().parse_args(argv)


def _containers(pod_spec):
    return {c["name"]: c for c in pod_spec["containers"]}


def _check_job_pod(pod, configmaps):
    (c,) = pod["containers"]
    args = _parse_dask_kernels(c["args"])
    assert args.command == "run" and args.scheduler
    mount = next(m for m in c["volumeMounts"] if args.job.startswith(m["mountPath"] + "/"))
    vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    text = configmaps[vol["configMap"]["name"]][os.path.basename(args.job)]
    return c["image"], text


def _valid_job_text(text, tmp_path):
    p = tmp_path / "job.toml"
    p.write_text(text)
    for _, argv, _ in steps(load_job(str(p)), ["--scheduler", "tcp://10.0.0.1:8786"]):
        build_parser().parse_args(argv)


def test_daskjob_manifest(tmp_path):
    docs = _yaml("k8s/daskjob.yaml")
    configmaps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    (dj,) = [d for d in docs if d["kind"] == "DaskJob"]
    assert dj["apiVersion"] == "kubernetes.dask.org/v1"
    spec = dj["spec"]
    assert set(spec) == {"job", "cluster"}
    image, text = _check_job_pod(spec["job"]["spec"], configmaps)
    _valid_job_text(text, tmp_path)
    cluster = spec["cluster"]["spec"]
    (w,) = cluster["worker"]["spec"]["containers"]
    (s,) = cluster["scheduler"]["spec"]["containers"]
    _parse_dask(w["args"])
    _parse_dask(s["args"])
    assert {w["image"], s["image"], image} == {image}
    port = cluster["scheduler"]["service"]["ports"][0]
    assert port["port"] == 8786 and port["targetPort"] in [p["name"] for p in s["ports"]]
    assert cluster["scheduler"]["service"]["selector"]["dask.org/cluster-name"] == dj["metadata"]["name"]


def test_cronjob_manifest(tmp_path):
    docs = _yaml("k8s/cronjob.yaml")
    configmaps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    (cj,) = [d for d in docs if d["kind"] == "CronJob"]
    (dc,) = [d for d in docs if d["kind"] == "DaskCluster"]
    assert cj["apiVersion"] == "batch/v1" and len(cj["spec"]["schedule"].split()) == 5
    assert cj["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    image, text = _check_job_pod(pod, configmaps)
    _valid_job_text(text, tmp_path)
    args = _parse_dask_kernels(pod["containers"][0]["args"])
    # the job talks to the DaskCluster's scheduler service (the operator names it <name>-scheduler)
    assert args.scheduler == f"tcp://{dc['metadata']['name']}-scheduler:8786"
    assert _containers(dc["spec"]["worker"]["spec"])["worker"]["image"] == image


def test_readme_example_command_parses():
    text = open(os.path.join(DEPLOY, "README.md")).read()
    block = text.split("```bash")[1].split("```")[0]
    cmd = " ".join(ln.rstrip("\\").strip() for ln in block.splitlines() if ln.strip())
    kernels = cmd[cmd.index("dask-kernels"):]
    _parse_dask_kernels(shlex.split(kernels))


def test_the_image_has_the_s3_and_dashboard_extras_and_no_deploy_file_turns_the_dashboard_off():
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    docker = open(os.path.join(DEPLOY, "Dockerfile")).read()
    assert '"/src[s3,dashboard]"' in docker and {"s3", "dashboard"} <= set(extras)
    for folder, _, files in os.walk(DEPLOY):
        for name in files:
            assert "--no-dashboard" not in open(os.path.join(folder, name)).read(), name


def test_a_commands_cluster_logs_its_dashboard_link(caplog):
    import logging

    from dask_kernels.cli._cluster import _announce_dashboard

    class Client:
        dashboard_link = "http://127.0.0.1:8787/status"

        def __init__(self, services):
            self.services = services

        def scheduler_info(self):
            return {"services": self.services}

        def run_on_scheduler(self, function):
            return self.bokeh

    with caplog.at_level(logging.INFO, logger="dask_kernels"):
        for services, bokeh in [({"dashboard": 8787}, True), ({}, True), ({"dashboard": 8787}, False)]:
            client = Client(services)
            client.bokeh = bokeh  # without bokeh the port answers but draws nothing: no link
            _announce_dashboard(client)
    assert [r.getMessage() for r in caplog.records] == ["dashboard: http://127.0.0.1:8787/status"]
