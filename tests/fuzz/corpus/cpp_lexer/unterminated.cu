/* never closed
int x = "open string
