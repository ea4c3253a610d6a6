"""The deployment files agree: the compose setup's nginx is deploy/nginx.conf with only its upstreams, pid and
log changed, and compose runs as many app services as that file has upstream servers."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _settings(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [line for line in lines if not re.match(r"(server \S+:\d+;|pid |error_log )", line)]


def test_compose_nginx_is_the_tested_nginx_config():
    tested = (ROOT / "deploy" / "nginx.conf").read_text()
    compose = (ROOT / "deploy" / "nginx.compose.conf").read_text()
    assert _settings(compose) == _settings(tested)
    services = re.findall(r"(?m)^  (app\d+): \*app", (ROOT / "deploy" / "compose.yaml").read_text())
    assert re.findall(r"server (app\d+):8501;", compose) == services == ["app1", "app2", "app3"]
    assert len(re.findall(r"server 127\.0\.0\.1:\d+;", tested)) == len(services)
