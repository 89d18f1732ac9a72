"""The model types forgetless has an adapter for (``models/adapters.py`` registers one per family;
``tests/test_cli_startup.py`` checks this list equals that registry). Standard library only, so
``forgetless list`` names them without importing torch."""
MODEL_TYPES = ("bart", "bert", "distilbert", "electra", "encoder-decoder", "gpt2", "llama", "mbart", "mistral", "mt5",
               "qwen2", "qwen3", "roberta", "t5", "xlm-roberta")
