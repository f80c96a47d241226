package http

// SafeNext is safeNext, for the tests of package http_test.
var SafeNext = safeNext
