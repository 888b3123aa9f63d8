"""docker/compose.yaml's optional vLLM profile is wired the way docs/operations/deployment.md tells an operator to use it: off unless
asked for, a local checkpoint on a GPU, and an OpenAI-compatible endpoint the default worker's `openai` rounds
reach with the key the app is given. (No GPU or image pull here: this checks the file, not a running server.)"""

from __future__ import annotations

from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parent.parent / "docker" / "compose.yaml"


def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]


def argument(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_vllm_and_the_split_run_only_when_their_profile_is_asked_for():
    found = services()
    assert found["vllm"]["profiles"] == ["vllm"]
    assert {name: service["profiles"] for name, service in found.items() if service.get("profiles")} == {
        "web-http": ["split"], "split-proxy": ["split"], "vllm": ["vllm"]}


def test_the_split_proxy_sends_websockets_to_asgi_and_the_rest_to_gunicorn_and_is_the_trusted_proxy():
    """docs/operations/deployment.md's split: gunicorn (annotate/config/gunicorn.py) behind an nginx whose address
    web-http trusts for X-Forwarded-For, so the login lockout sees each client's own address."""
    found = services()
    http, proxy = found["web-http"], found["split-proxy"]
    assert http["command"] == ["gunicorn", "-c", "python:annotate.config.gunicorn"]
    address = proxy["networks"]["proxy"]["ipv4_address"]
    assert http["environment"]["TRUSTED_PROXIES"].endswith(f":-{address}}}")
    assert "proxy" in http["networks"] and "proxy" in found["web"]["networks"]
    conf_mount = next(volume for volume in proxy["volumes"] if volume.endswith(":/etc/nginx/conf.d/default.conf:ro"))
    conf = (COMPOSE.parent / conf_mount.split(":")[0]).read_text(encoding="utf-8")
    port = http["environment"]["WEB_HTTP_BIND"].rpartition(":")[2]
    assert f"upstream wsgi {{ server web-http:{port}; }}" in conf and "upstream asgi { server web:8000; }" in conf
    websockets = conf[conf.index("location /ws/"):conf.index("location / ")]
    assert "proxy_pass http://asgi;" in websockets and "Upgrade $http_upgrade" in websockets
    assert "proxy_pass http://wsgi;" in conf[conf.index("location / "):]
    assert conf.count("X-Forwarded-For $proxy_add_x_forwarded_for") == 2  # appends the address it was reached from


def test_vllm_serves_a_mounted_checkpoint_on_a_gpu_in_bf16_without_downloading():
    vllm = services()["vllm"]
    command = vllm["command"]
    assert argument(command, "--model").startswith("/models/")
    assert argument(command, "--dtype") == "bfloat16"
    assert any(volume.startswith("${MODELS_DIR") and volume.endswith(":/models:ro") for volume in vllm["volumes"])
    assert vllm["environment"]["HF_HUB_OFFLINE"] == "1"
    assert vllm["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "/health" in " ".join(vllm["healthcheck"]["test"])


def test_the_openai_rounds_reach_it_with_the_key_the_app_is_given():
    found = services()
    command = found["vllm"]["command"]
    assert argument(command, "--port") == "8000"  # the base_url docs/operations/deployment.md gives http://vllm:8000/v1
    assert argument(command, "--api-key") == "${VLLM_API_KEY:-feedbacklab}"
    assert found["worker"]["environment"]["VLLM_API_KEY"] == "${VLLM_API_KEY:-feedbacklab}"
    assert "model.openai" in argument(found["worker"]["command"], "-Q").split(",")
