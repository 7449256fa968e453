// Imports a file that does not exist (../import-errors.test).
import "not_there.fp"
