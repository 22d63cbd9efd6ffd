"""Stage 2, hearing: echo cancellation, onsets per mic (bleed and crosstalk rejected), segments."""
