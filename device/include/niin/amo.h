/* niin/amo.h -- placeholder: filled by the work on issue 12. */
#ifndef NIIN_AMO_H
#define NIIN_AMO_H
#endif
