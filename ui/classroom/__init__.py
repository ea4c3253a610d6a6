"""The classroom: the guided lesson (lesson, lesson_steps, lesson_circuit, lesson_print), presenter mode and the
speaker view, links between views and share links, and the class on the page (class_mode; its store is the
top-level classroom package)."""
