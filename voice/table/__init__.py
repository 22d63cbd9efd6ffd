"""Stage 4, the table: the pipeline that runs the stages, the arbiter, the referee glue, game
bindings, transcripts, the journal, narration, the screen and the table's set-up."""
