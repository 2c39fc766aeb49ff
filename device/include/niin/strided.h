/* niin/strided.h -- placeholder: filled by the work on issue 12. */
#ifndef NIIN_STRIDED_H
#define NIIN_STRIDED_H
#endif
