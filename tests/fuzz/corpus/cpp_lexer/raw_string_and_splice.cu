const char* s = R"x(/* not a comment */ ")x";
#define TWO \
  2
int n = 1'000'000; // c
