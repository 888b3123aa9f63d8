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


def test_vllm_runs_only_when_its_profile_is_asked_for():
    found = services()
    assert found["vllm"]["profiles"] == ["vllm"]
    assert [name for name, service in found.items() if service.get("profiles")] == ["vllm"]


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
