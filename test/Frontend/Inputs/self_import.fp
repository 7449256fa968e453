// A file that imports itself (../import-errors.test).
import "self_import.fp"
