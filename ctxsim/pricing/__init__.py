"""Prices: every request priced from genai-prices' data at its own model and time (`prices`)."""
