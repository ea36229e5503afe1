"""The course around the lessons: the batch, the bench, claim checks, profiles, the articles' figures, the summary."""
