// Runs at import time.
__attribute__((constructor)) static void on_load() {}
