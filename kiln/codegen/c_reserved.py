"""Identifiers that the headers of a generated C file declare (glibc's stdio.h, stdlib.h,
string.h, math.h, stdint.h, stddef.h, stdbool.h, stdarg.h, as functions, types or macros), which a
generated function or variable must not reuse. Extracted once with ``gcc -E`` / ``gcc -dM -E``;
other C libraries declare a subset of these.
"""

LIBC_NAMES = frozenset(
    """
    BIG_ENDIAN BUFSIZ BYTE_ORDER EOF EXIT_FAILURE EXIT_SUCCESS FD_CLR FD_ISSET FD_SET FD_SETSIZE
    FD_ZERO FILE FILENAME_MAX FOPEN_MAX HUGE_VAL HUGE_VALF HUGE_VALL INFINITY INT16_C INT16_MAX
    INT16_MIN INT32_C INT32_MAX INT32_MIN INT64_C INT64_MAX INT64_MIN INT8_C INT8_MAX INT8_MIN
    INTMAX_C INTMAX_MAX INTMAX_MIN INTPTR_MAX INTPTR_MIN INT_FAST16_MAX INT_FAST16_MIN
    INT_FAST32_MAX INT_FAST32_MIN INT_FAST64_MAX INT_FAST64_MIN INT_FAST8_MAX INT_FAST8_MIN
    INT_LEAST16_MAX INT_LEAST16_MIN INT_LEAST32_MAX INT_LEAST32_MIN INT_LEAST64_MAX INT_LEAST64_MIN
    INT_LEAST8_MAX INT_LEAST8_MIN LITTLE_ENDIAN L_ctermid L_tmpnam MATH_ERREXCEPT MATH_ERRNO
    MB_CUR_MAX NAN NFDBITS NULL PDP_ENDIAN PTRDIFF_MAX PTRDIFF_MIN P_tmpdir RAND_MAX SEEK_CUR
    SEEK_END SEEK_SET SIG_ATOMIC_MAX SIG_ATOMIC_MIN SIZE_MAX TMP_MAX UINT16_C UINT16_MAX UINT32_C
    UINT32_MAX UINT64_C UINT64_MAX UINT8_C UINT8_MAX UINTMAX_C UINTMAX_MAX UINTPTR_MAX
    UINT_FAST16_MAX UINT_FAST32_MAX UINT_FAST64_MAX UINT_FAST8_MAX UINT_LEAST16_MAX UINT_LEAST32_MAX
    UINT_LEAST64_MAX UINT_LEAST8_MAX WCHAR_MAX WCHAR_MIN WCONTINUED WEXITED WEXITSTATUS WIFCONTINUED
    WIFEXITED WIFSIGNALED WIFSTOPPED WINT_MAX WINT_MIN WNOHANG WNOWAIT WSTOPPED WSTOPSIG WTERMSIG
    WUNTRACED a64l abort abs acos acosf acosh acoshf acoshl acosl aligned_alloc alloca arc4random
    arc4random_buf arc4random_uniform asin asinf asinh asinhf asinhl asinl at_quick_exit atan atan2
    atan2f atan2l atanf atanh atanhf atanhl atanl atexit atof atoi atol atoll bcmp bcopy be16toh
    be32toh be64toh blkcnt_t blksize_t bool bsearch bzero caddr_t calloc cbrt cbrtf cbrtl ceil ceilf
    ceill clearenv clearerr clearerr_unlocked clock_t clockid_t copysign copysignf copysignl cos
    cosf cosh coshf coshl cosl ctermid daddr_t dev_t div double_t dprintf drand48 drand48_r drem
    dremf dreml ecvt ecvt_r erand48 erand48_r erf erfc erfcf erfcl erff erfl exit exp exp2 exp2f
    exp2l expf expl explicit_bzero expm1 expm1f expm1l fabs fabsf fabsl false fclose fcvt fcvt_r
    fd_mask fdim fdimf fdiml fdopen feof feof_unlocked ferror ferror_unlocked fflush fflush_unlocked
    ffs ffsl ffsll fgetc fgetc_unlocked fgetpos fgets fileno fileno_unlocked finite finitef finitel
    float_t flockfile floor floorf floorl fma fmaf fmal fmax fmaxf fmaxl fmemopen fmin fminf fminl
    fmod fmodf fmodl fopen fpclassify fpos_t fprintf fputc fputc_unlocked fputs fread fread_unlocked
    free freopen frexp frexpf frexpl fsblkcnt_t fscanf fseek fseeko fsetpos fsfilcnt_t fsid_t ftell
    ftello ftrylockfile funlockfile fwrite fwrite_unlocked gamma gammaf gammal gcvt getc
    getc_unlocked getchar getchar_unlocked getdelim getenv getline getloadavg getsubopt getw gid_t
    htobe16 htobe32 htobe64 htole16 htole32 htole64 hypot hypotf hypotl id_t ilogb ilogbf ilogbl
    index initstate initstate_r ino_t int_fast16_t int_fast32_t int_fast64_t int_fast8_t
    int_least16_t int_least32_t int_least64_t int_least8_t intmax_t intptr_t isfinite isgreater
    isgreaterequal isinf isinff isinfl isless islessequal islessgreater isnan isnanf isnanl isnormal
    isunordered j0 j0f j0l j1 j1f j1l jn jnf jnl jrand48 jrand48_r key_t l64a labs lcong48 lcong48_r
    ldexp ldexpf ldexpl ldiv le16toh le32toh le64toh lgamma lgamma_r lgammaf lgammaf_r lgammal
    lgammal_r linux llabs lldiv llrint llrintf llrintl llround llroundf llroundl locale_t loff_t log
    log10 log10f log10l log1p log1pf log1pl log2 log2f log2l logb logbf logbl logf logl lrand48
    lrand48_r lrint lrintf lrintl lround lroundf lroundl malloc math_errhandling mblen mbstowcs
    mbtowc memccpy memchr memcmp memcpy memmove memset mkdtemp mkstemp mkstemps mktemp mode_t modf
    modff modfl mrand48 mrand48_r nan nanf nanl nearbyint nearbyintf nearbyintl nextafter nextafterf
    nextafterl nexttoward nexttowardf nexttowardl nlink_t nrand48 nrand48_r off_t offsetof on_exit
    open_memstream pclose perror pid_t popen posix_memalign pow powf powl printf pselect
    pthread_attr_t pthread_key_t pthread_once_t pthread_spinlock_t pthread_t ptrdiff_t putc
    putc_unlocked putchar putchar_unlocked putenv puts putw qecvt qecvt_r qfcvt qfcvt_r qgcvt qsort
    quad_t quick_exit quot rand rand_r random random_r realloc reallocarray realpath remainder
    remainderf remainderl remove remquo remquof remquol rename renameat rewind rindex rint rintf
    rintl round roundf roundl rpmatch scalb scalbf scalbl scalbln scalblnf scalblnl scalbn scalbnf
    scalbnl scanf seed48 seed48_r select setbuf setbuffer setenv setlinebuf setstate setstate_r
    setvbuf signbit significand significandf significandl sigset_t sin sinf sinh sinhf sinhl sinl
    size_t snprintf sprintf sqrt sqrtf sqrtl srand srand48 srand48_r srandom srandom_r sscanf
    ssize_t stderr stdin stdout stpcpy stpncpy strcasecmp strcasecmp_l strcat strchr strcmp strcoll
    strcoll_l strcpy strcspn strdup strerror strerror_l strerror_r strlen strncasecmp strncasecmp_l
    strncat strncmp strncpy strndup strnlen strpbrk strrchr strsep strsignal strspn strstr strtod
    strtof strtok strtok_r strtol strtold strtoll strtoq strtoul strtoull strtouq strxfrm strxfrm_l
    suseconds_t system tan tanf tanh tanhf tanhl tanl tempnam tgamma tgammaf tgammal time_t timer_t
    tmpfile tmpnam tmpnam_r true trunc truncf truncl u_char u_int u_int16_t u_int32_t u_int64_t
    u_int8_t u_long u_quad_t u_short uid_t uint uint_fast16_t uint_fast32_t uint_fast64_t
    uint_fast8_t uint_least16_t uint_least32_t uint_least64_t uint_least8_t uintmax_t uintptr_t
    ulong ungetc unix unsetenv ushort va_arg va_copy va_end va_list va_start valloc vdprintf
    vfprintf vfscanf vprintf vscanf vsnprintf vsprintf vsscanf wchar_t wcstombs wctomb y0 y0f y0l y1
    y1f y1l yn ynf ynl
    """.split()
)
