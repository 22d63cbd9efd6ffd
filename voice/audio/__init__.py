"""Stage 1, audio: typed frames and their features, WAV and live sources, resampling, clock alignment."""
