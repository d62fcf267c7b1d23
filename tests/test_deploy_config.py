"""The deployment config that a classroom relies on."""

import pathlib
import subprocess
import tomllib

import pytest

CONFIG = tomllib.loads((pathlib.Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())


def test_tracebacks_are_hidden_and_the_file_watcher_is_off():
    assert CONFIG["client"]["showErrorDetails"] == "none"
    assert CONFIG["server"]["fileWatcherType"] == "none"


def test_requirements_take_the_cpu_build_of_torch():
    lines = (pathlib.Path(__file__).resolve().parents[1] / "requirements.txt").read_text().splitlines()
    options = [line for line in lines if line.startswith("--")]
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    assert "torch==2.13.0" in lines


def test_the_nginx_site_file_is_rewritten_for_loopback_ports_only():
    """tools.multi_server runs deploy/nginx/attention-explorer.conf with only its ports and log path changed."""
    from tools.multi_server import SITE_CONF, site_config

    original = SITE_CONF.read_text()
    text = site_config([9001, 9002, 9003], 9100, pathlib.Path("/tmp/x/access.log"))
    upstream = text[text.index("upstream attention_explorer") : text.index("server {")]
    assert [line.strip() for line in upstream.splitlines() if line.strip().startswith("server ")] == [
        "server 127.0.0.1:9001;",
        "server 127.0.0.1:9002;",
        "server 127.0.0.1:9003;",
    ]
    assert "listen 127.0.0.1:9100;" in text and "listen 80;" not in text
    assert "access_log /tmp/x/access.log attention_explorer;" in text
    # the sticky-session and websocket directives come through untouched
    for directive in ("hash $ae_route consistent;", "proxy_set_header Upgrade $http_upgrade;", "proxy_read_timeout"):
        assert directive in original and directive in text


def test_the_nginx_site_rewrite_refuses_bad_ports_and_a_template_it_does_not_know():
    from tools.multi_server import site_config

    log = pathlib.Path("/tmp/x/access.log")
    for ports, listen in (([], 8080), ([0], 8080), ([8501], 70000)):
        with pytest.raises(ValueError, match="ports"):
            site_config(ports, listen, log)
    with pytest.raises(ValueError, match="expected upstream server lines"):
        site_config([8501], 8080, log, template="upstream x { server 10.0.0.1:8501; }\nserver { listen 80; }\n")


def test_nginx_accepts_the_generated_configuration(tmp_path):
    from tools.multi_server import MAIN_CONF, nginx_binary, site_config

    binary = nginx_binary()
    if binary is None:
        pytest.skip("nginx is not installed (apt-get install -y nginx)")
    conf = tmp_path / "nginx.conf"
    conf.write_text(MAIN_CONF.format(tmp=tmp_path, site=site_config([8501, 8502], 8080, tmp_path / "access.log")))
    out = subprocess.run(
        [binary, "-t", "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(conf)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


def test_no_full_garbage_collection_after_every_run():
    """Streamlit's default gc.collect() after each run costs ~140 ms with torch loaded: more than a page's rerun."""
    assert CONFIG["runner"]["postScriptGC"] is False
