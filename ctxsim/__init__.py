"""ctxsim: replay recorded LLM-agent traces under context-management policies and meter them."""

__version__ = "0.1.0"
