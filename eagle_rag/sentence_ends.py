"""The stops that end a sentence, one definition for the chunker, the heading finder and the
extractive answerer, so that they agree on where a sentence ends in every script."""

# End a sentence only before a space or the end of the text: a point inside a token is no end
# ("4.7 million", "192.168.8.1", "e.g.").
SPACED_STOPS = ".!?"
# End a sentence wherever they stand (no number or abbreviation uses them): the Chinese and
# Japanese full stops, the Devanagari danda and double danda (Hindi, Marathi, Nepali,
# Sanskrit), the Arabic question mark and the Urdu full stop.
SPACELESS_STOPS = "。！？।॥؟۔"
# The stops that ask: a sentence ending with one is a question (an FAQ's "Q: ...?").
QUESTION_MARKS = "?？؟"
