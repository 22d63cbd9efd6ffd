"""Stage 3, recognition: the Recognizer interface and its backends, the grammar of the moment,
pronunciations, intents per game and the speech-model catalogue."""
