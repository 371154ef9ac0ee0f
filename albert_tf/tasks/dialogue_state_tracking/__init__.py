"""Dialogue state tracking: WoS's (KLUE's) dialogues and ontology, an ALBERT tracker that picks every slot's
value among the ontology's (`AlbertDialogueStateTracker`), its objective, KLUE's joint goal accuracy and slot
F1, and serving."""

from albert_tf.tasks.dialogue_state_tracking import head  # noqa: F401 (registers the state tracker head)
