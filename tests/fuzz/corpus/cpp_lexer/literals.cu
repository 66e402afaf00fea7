auto a = u8"\u00e9\""; char c = '\''; auto h = 0x1p-3f; auto e = 1.5e+10; L'x';
int y;