"""Model config services: create, edit, retire; every kind of bad input refused with its field, nothing half-saved."""

from __future__ import annotations

import pytest

from annotate.errors import InvalidFields
from annotate.modelconfigs import validation
from annotate.modelconfigs.services import model_create, model_retire, model_update
from annotate.models import ModelConfig
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db

OPENAI = {"base_url": "http://vllm:8000/v1", "model": "Qwen/Qwen2-VL-7B-Instruct", "api_key_env": "VLLM_API_KEY"}


def fields_of(error: InvalidFields) -> dict[str, str]:
    return dict(error.problems)


def test_create_openai_model_with_display_name():
    config = model_create(name="gpt-4o", display_name="GPT-4o", backend="openai", backend_settings=OPENAI,
                          generation={"max_new_tokens": 256, "temperature": 0.0, "seed": 1})
    config.refresh_from_db()
    assert (config.name, config.label, config.backend, config.queue_name) == ("gpt-4o", "GPT-4o", "openai",
                                                                             "model.openai")
    assert config.backend_settings == OPENAI and config.is_active


def test_create_transformers_model_does_not_load_it():
    config = model_create(name="qwen2-vl", backend="transformers", queue="model.qwen2-vl",
                          backend_settings={"path": "/models/not-here", "device": "cuda:1", "dtype": "bfloat16"})
    assert config.queue_name == "model.qwen2-vl"


@pytest.mark.parametrize(("kwargs", "field", "words"), [
    ({"name": "GPT 4o"}, "name", "lower-case"),
    ({"name": ""}, "name", "lower-case"),
    ({"backend": "gemini"}, "backend", "unknown backend 'gemini'"),
    ({"display_name": " padded "}, "display_name", "leading or trailing"),
    ({"display_name": "x" * 129}, "display_name", "at most 128"),
    ({"backend_settings": {"model": "m"}}, "backend_settings.base_url", "required for the openai backend"),
    ({"backend_settings": {**OPENAI, "base_url": "vllm:8000"}}, "backend_settings.base_url", "http://"),
    ({"backend_settings": {**OPENAI, "temperature": 0.2}}, "backend_settings.temperature", "unknown openai setting"),
    ({"backend_settings": {**OPENAI, "api_key_env": "sk-proj-abcdef1234567890"}}, "backend_settings.api_key_env",
     "looks like an API key"),
    ({"backend_settings": {**OPENAI, "api_key_env": "3f9a0c7b1e2d4a6f8b0c2e4d6f8a0b1c"}},
     "backend_settings.api_key_env", "looks like an API key"),
    ({"backend_settings": {**OPENAI, "api_key_env": "MY KEY"}}, "backend_settings.api_key_env", "NAME of an env"),
    ({"backend_settings": {**OPENAI, "api_key": "abc"}}, "backend_settings.api_key", "never store a key"),
    ({"backend_settings": {**OPENAI, "extra_body": {"token": "hf_abcdefgh"}}}, "backend_settings.extra_body.token",
     "looks like an API key"),
    ({"backend_settings": {**OPENAI, "read_timeout": 0}}, "backend_settings.read_timeout", "above 0"),
    ({"backend_settings": {**OPENAI, "max_retries": "3"}}, "backend_settings.max_retries", "whole number"),
    ({"backend_settings": ["base_url"]}, "backend_settings", "must be an object"),
    ({"generation": {"max_new_tokens": 0}}, "generation.max_new_tokens", "at least 1"),
    ({"generation": {"top_k": 5}}, "generation.top_k", "unknown generation setting"),
    ({"generation": {"temperature": "hot"}}, "generation.temperature", "must be a number"),
    ({"generation": {"stop": "END"}}, "generation.stop", "list of non-empty strings"),
    ({"generation": "fast"}, "generation", "must be an object"),
    ({"queue": "model queue"}, "queue", "queue name"),
    ({"soft_time_limit": 0}, "soft_time_limit", "at least 1"),
    ({"soft_time_limit": 60, "time_limit": 60}, "time_limit", "above soft_time_limit (60 s)"),
])
def test_bad_input_names_the_field_and_writes_nothing(kwargs, field, words):
    arguments = {"name": "gpt-4o", "backend": "openai", "backend_settings": OPENAI} | kwargs
    with pytest.raises(InvalidFields) as caught:
        model_create(**arguments)
    problems = fields_of(caught.value)
    assert field in problems, problems
    assert words in problems[field]
    assert f"{field}: " in caught.value.message
    assert not ModelConfig.objects.exists()


@pytest.mark.parametrize(("backend", "backend_settings", "field", "words"), [
    ("transformers", {}, "backend_settings.path", "required"),
    ("transformers", {"path": "Qwen/Qwen2-VL-7B-Instruct"}, "backend_settings.path", "absolute path"),
    ("transformers", {"path": "/m", "device": "gpu"}, "backend_settings.device", '"cuda:N"'),
    ("transformers", {"path": "/m", "dtype": "fp8"}, "backend_settings.dtype", "'bfloat16'"),
    ("transformers", {"path": "/m", "max_batch_size": 0}, "backend_settings.max_batch_size", "at least 1"),
    ("transformers", {"path": "/m", "compiled_decoding": "yes"}, "backend_settings.compiled_decoding", '"auto"'),
    ("transformers", {"path": "/m", "compile_batch_sizes": [0, 8]}, "backend_settings.compile_batch_sizes",
     "list of whole numbers of at least 1"),
    ("transformers", {"path": "/m", "compile_cache_lengths": 512}, "backend_settings.compile_cache_lengths",
     "non-empty list"),
    ("transformers", {"path": "/m", "batch_slice_tokens": -4}, "backend_settings.batch_slice_tokens", "at least 0"),
    ("simulated", {"fail": "sometimes"}, "backend_settings.fail", "'permanent'"),
    ("simulated", {"correct_from_round": True}, "backend_settings.correct_from_round", "whole number"),
    ("replay", {"chunk_delay": -1}, "backend_settings.chunk_delay", "at least 0"),
    ("replay", {"speed": 2}, "backend_settings.speed", "known: chunk_delay"),
])
def test_each_backend_checks_its_own_keys(backend, backend_settings, field, words):
    with pytest.raises(InvalidFields) as caught:
        model_create(name="m", backend=backend, backend_settings=backend_settings)
    assert words in fields_of(caught.value)[field]


def test_every_problem_is_reported_at_once():
    with pytest.raises(InvalidFields) as caught:
        model_create(name="Bad Name", backend="openai", backend_settings={"base_url": "x"},
                     generation={"seed": -1})
    assert set(fields_of(caught.value)) == {"name", "backend_settings.base_url", "backend_settings.model",
                                            "generation.seed"}


def test_a_taken_name_is_refused_even_when_retired():
    model_retire(config=ModelConfigFactory(name="gpt-4o"))
    with pytest.raises(InvalidFields) as caught:
        model_create(name="gpt-4o", backend="simulated")
    assert "already exists" in fields_of(caught.value)["name"]
    assert ModelConfig.objects.count() == 1


def test_update_changes_only_what_is_given_and_checks_the_whole():
    config = model_create(name="gpt-4o", backend="openai", backend_settings=OPENAI)
    model_update(config=config, display_name="GPT-4o (2024-08)", generation={"max_new_tokens": 64})
    config.refresh_from_db()
    assert (config.display_name, config.generation, config.backend_settings) == (
        "GPT-4o (2024-08)", {"max_new_tokens": 64}, OPENAI)
    # The old settings do not fit a new backend: the whole config is checked, and nothing changes.
    with pytest.raises(InvalidFields) as caught:
        model_update(config=config, backend="transformers", display_name="Local")
    assert "backend_settings.base_url" in fields_of(caught.value)
    config.refresh_from_db()
    assert (config.backend, config.display_name) == ("openai", "GPT-4o (2024-08)")


@pytest.mark.parametrize(("changes", "field"), [
    ({"name": "gpt-5"}, "name"), ({"pk": 3}, "pk"), ({"is_active": "no"}, "is_active"),
])
def test_update_refuses_renames_and_unknown_fields(changes, field):
    config = ModelConfigFactory(name="sim")
    with pytest.raises(InvalidFields) as caught:
        model_update(config=config, **changes)
    assert field in fields_of(caught.value)
    config.refresh_from_db()
    assert config.name == "sim" and config.is_active


def test_retire_keeps_the_row():
    config = ModelConfigFactory(name="old")
    assert model_retire(config=config).is_active is False
    assert model_retire(config=config).is_active is False
    assert ModelConfig.objects.get(name="old").is_active is False
    model_update(config=config, is_active=True)
    assert ModelConfig.objects.get(name="old").is_active is True


@pytest.mark.parametrize(("value", "secret"), [
    ("OPENAI_API_KEY", False), ("VLLM_API_KEY_2", False), ("hf_token", True), ("sk-abc", True),
    ("AIzaSyD-abcdefghijklmnop", True), ("AbCdEf1234567890XyZw", True), ("a" * 40, True),
    ("MY_VERY_LONG_BUT_PERFECTLY_ORDINARY_VARIABLE_NAME", False),
])
def test_what_looks_like_a_key(value, secret):
    assert validation.looks_like_a_key(value) is secret


def test_the_settings_table_matches_the_backends():
    """The table checks settings without building a transformers backend (that loads the model): it must list
    exactly the keys each backend's constructor accepts."""
    from models_runtime import devices
    from models_runtime.backends import openai, simulated, transformers

    assert set(validation.BACKEND_SETTINGS["openai"]) == openai.SETTINGS_KEYS
    assert set(validation.BACKEND_SETTINGS["simulated"]) == simulated.SETTINGS_KEYS
    assert set(validation.BACKEND_SETTINGS["transformers"]) == transformers.SETTINGS_KEYS
    assert set(validation.BACKEND_SETTINGS["replay"]) == {"chunk_delay"}
    assert set(validation.BACKEND_SETTINGS) == set(ModelConfig.Backend.values)
    dtype_check = validation.BACKEND_SETTINGS["transformers"]["dtype"][0]
    assert all(dtype_check(dtype) is None for dtype in devices.DTYPES)


def test_an_openai_model_may_name_several_endpoints():
    endpoints = [{"base_url": "http://vllm-1:8000/v1"}, {"base_url": "https://eu.example.org/v1",
                                                         "api_key_env": "EU_API_KEY"}]
    config = model_create(name="qwen-fleet", backend="openai", backend_settings={
        "model": "qwen", "endpoints": endpoints, "endpoint_cooldown": 10})
    assert config.backend_settings["endpoints"] == endpoints


@pytest.mark.parametrize(("given", "field", "words"), [
    ({"model": "m"}, "backend_settings.base_url", "or endpoints"),
    ({"model": "m", "endpoints": []}, "backend_settings.endpoints", "must be a list"),
    ({"model": "m", "endpoints": [{"base_url": "vllm:8000"}]}, "backend_settings.endpoints",
     "endpoint 1: must be a URL starting with http://"),
    ({"model": "m", "endpoints": [{"base_url": "http://a/v1", "api_key_env": "sk-live-1234567890abcdef"}]},
     "backend_settings.endpoints", "endpoint 1: looks like an API key"),
    ({"model": "m", "endpoints": [{"base_url": "http://a/v1", "token": "sk-live-1234567890abcdef"}]},
     "backend_settings.endpoints[0].token", "looks like an API key"),
    ({"model": "m", "base_url": "http://a/v1", "endpoints": [{"base_url": "http://b/v1"}]},
     "backend_settings", "not both"),
])
def test_bad_endpoints_are_refused_with_their_field(given, field, words):
    with pytest.raises(InvalidFields) as error:
        model_create(name="fleet", backend="openai", backend_settings=given)
    assert words in fields_of(error.value)[field]
    assert not ModelConfig.objects.filter(name="fleet").exists()
