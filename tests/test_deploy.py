"""The deployment files agree with each other and with docs/DEPLOY.md: the compose setup's nginx is deploy/nginx.conf
with only its upstreams, pid, log, temp folders and listening address changed; nginx writes only under its own
prefix; replicas listen on 127.0.0.1 offline and in hosted mode; the memory limits cover the measured peak; a
replica is restarted and warmed by its own port."""
import re
import subprocess
from pathlib import Path

import yaml

from bench.replicas import nginx_binary

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
GUIDE = (ROOT / "docs" / "DEPLOY.md").read_text()
PEAK_BYTES = 1.96e9 + 0.4e9  # the server's measured peak (precision, hosted maxima) + a cost sweep's helpers
FILE_DIRECTIVES = re.compile(r"(?m)^\s*(pid|error_log|\w+_temp_path)\s+(\S+)")


def _settings(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [line for line in lines if not re.match(r"(server \S+:\d+;|pid |error_log |\w+_temp_path |listen )", line)]


def test_compose_nginx_is_the_tested_nginx_config():
    tested = (DEPLOY / "nginx.conf").read_text()
    compose = (DEPLOY / "nginx.compose.conf").read_text()
    assert _settings(compose) == _settings(tested)
    services = re.findall(r"(?m)^  (app\d+): \*app", (DEPLOY / "compose.yaml").read_text())
    assert re.findall(r"server (app\d+):8501;", compose) == services == ["app1", "app2", "app3"]
    assert len(re.findall(r"server 127\.0\.0\.1:\d+;", tested)) == len(services)


def test_nginx_writes_only_under_its_prefix_and_listens_on_this_machine(tmp_path):
    text = (DEPLOY / "nginx.conf").read_text()
    files = dict(FILE_DIRECTIVES.findall(text))
    assert {"pid", "error_log", "client_body_temp_path", "proxy_temp_path"} <= set(files)
    assert not [path for path in files.values() if path.startswith("/")], files  # relative: under -p, no root
    assert re.findall(r"(?m)^\s*listen (\S+);", text) == ["127.0.0.1:8080"]
    # the shipped file as the guide starts it, with a fresh prefix: nginx accepts it and writes only there
    nginx = nginx_binary()
    out = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-e", "stderr", "-c", str(DEPLOY / "nginx.conf")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert {"error.log", "client_body_temp", "proxy_temp"} <= {p.name for p in tmp_path.iterdir()}
    assert "-p ~/ae-nginx -e stderr -c \"$PWD/deploy/nginx.conf\" -s quit" in GUIDE  # and how to stop it


def test_replicas_listen_on_this_machine_offline_and_hosted():
    starts = [line for line in GUIDE.splitlines() if "streamlit run app.py --server.port" in line]
    assert starts and all("--server.address 127.0.0.1" in line for line in starts), starts
    assert all("HF_HUB_OFFLINE=1" in line and "ATTENTION_EXPLORER_HOSTED=1" in line for line in starts), starts
    unit = (DEPLOY / "systemd" / "attention-explorer@.service").read_text()
    assert "--server.port %i --server.address 127.0.0.1" in unit
    assert "ATTENTION_EXPLORER_HOSTED=1" in unit and "HF_HUB_OFFLINE=1" in unit
    assert "Restart=always" in unit and "-m bench.warm %i" in unit  # restarted, and warmed by its own port
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name in ("app1", "app2", "app3"):  # only nginx is published; the replicas share the corpus cache volume
        app = compose["services"][name]
        assert "ports" not in app and app["environment"]["HF_HUB_OFFLINE"] == "1"
        assert app["environment"]["ATTENTION_EXPLORER_CACHE"].startswith("/cache") and "corpus-cache:/cache" in \
            app["volumes"]


def _bytes(size: str) -> float:
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgKMG])?", size).groups()
    return float(number) * {"k": 2**10, "m": 2**20, "g": 2**30, None: 1}[unit and unit.lower()]


def test_memory_limits_cover_the_measured_peak_and_agree():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    limit = _bytes(compose["services"]["app1"]["mem_limit"])
    unit = re.search(r"MemoryMax=(\S+)", (DEPLOY / "systemd" / "attention-explorer@.service").read_text()).group(1)
    assert limit == _bytes(unit) >= PEAK_BYTES
    assert "1.96 GB" in GUIDE and f"mem_limit: {compose['services']['app1']['mem_limit']}" in GUIDE


def test_the_guide_covers_stopping_tls_warming_replicas_per_core_and_what_replicas_share():
    for needed in ("-s quit", "TLS", "python -m bench.warm", "replicas per core", "What replicas share",
                   "ATTENTION_EXPLORER_CACHE", "systemctl enable --now attention-explorer@8501"):
        assert needed in GUIDE, needed


def test_every_replica_launch_bounds_glibcs_arenas():
    from bench.replicas import ALLOCATOR, replica_env

    assert ALLOCATOR == {"MALLOC_ARENA_MAX": "2"}
    run = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]  # make run: a laptop's server
    assert "MALLOC_ARENA_MAX=2 $(VENV)/bin/streamlit run app.py" in run, run
    env = replica_env()  # what bench.replicas.cluster (the load test, the browser tests) starts replicas with
    assert env["MALLOC_ARENA_MAX"] == "2" and env["ATTENTION_EXPLORER_HOSTED"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    starts = [line for line in GUIDE.splitlines() if "streamlit run app.py --server.port" in line]
    assert starts and all("MALLOC_ARENA_MAX=2" in line for line in starts), starts
    assert "Environment=MALLOC_ARENA_MAX=2" in (DEPLOY / "systemd" / "attention-explorer@.service").read_text()
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert all(compose["services"][s]["environment"]["MALLOC_ARENA_MAX"] == "2" for s in ("app1", "app2", "app3"))
    assert re.search(r"(?m)^ENV .*MALLOC_ARENA_MAX=2", (DEPLOY / "Dockerfile").read_text())
    assert "limits.arenas_unbounded" in GUIDE  # why the environment, and what a replica started without it says
