import "self-import.fp"
