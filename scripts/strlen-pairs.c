/* strlen of a library (dlopen) against the C library's, pinned by the
 * caller (taskset), in 61 alternating pairs of short blocks timed by the
 * thread's CPU clock (so time the CPU spent elsewhere is not counted), over
 * one warm string or a 64 MiB rotation of strings (cold). Prints the best
 * GB/s of each and the median and quartiles of the per-pair ratios.
 *   cc -O2 -o /tmp/strlen-pairs scripts/strlen-pairs.c -ldl
 *   taskset -c 0 /tmp/strlen-pairs target/release/libkdelta_mem.so SIZE COLD(0|1) [OFFSET]
 * Used for the strlen figures in docs/mem.md; the library's strlen is
 * reached through its dispatch (a load and a branch more per call than the
 * benchmark's function pointer), which shows on strings of under ~100 bytes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
typedef size_t (*len_fn)(const char *);
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  void*h=dlopen(argv[1],RTLD_NOW|RTLD_LOCAL); len_fn k=(len_fn)dlsym(h,"strlen");
  len_fn g=(len_fn)dlsym(RTLD_NEXT,"strlen"); if(!g) g=strlen;
  size_t size=strtoul(argv[2],0,0); int cold=atoi(argv[3]); int off=argc>4?atoi(argv[4]):0;
  size_t st=(size+off+63)/64*64; size_t total=cold? (64u<<20): st; size_t slots=total/st; if(!slots)slots=1;
  unsigned char*b=mmap(0,slots*st+4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  for(size_t i=0;i<slots;i++){for(size_t j=0;j<size-1;j++)b[i*st+off+j]='a'+j%26;b[i*st+off+size-1]=0;}
  double best[2]={0,0}; double ratios[61]; 
  for(int r=0;r<61;r++){ double gb[2];
    for(int w=0;w<2;w++){ len_fn f=w?k:g; size_t calls= (size_t)(2e7/size)+1; size_t acc=0; static size_t cur=0;
      double t0=now(); for(size_t c=0;c<calls;c++){acc+=f((char*)b+cur*st+off); if(++cur==slots)cur=0;} double t=now()-t0;
      if(acc!=(size-1)*calls){printf("WRONG\n");return 1;} gb[w]=calls*(double)size/t/1e9; }
    ratios[r]=gb[1]/gb[0]; if(gb[0]>best[0])best[0]=gb[0]; if(gb[1]>best[1])best[1]=gb[1]; }
  for(int i=0;i<61;i++)for(int j=i+1;j<61;j++)if(ratios[j]<ratios[i]){double x=ratios[i];ratios[i]=ratios[j];ratios[j]=x;}
  printf("size %zu %s off %d: libc %.2f tuned %.2f GB/s (best); median ratio %.3f [quartiles %.3f..%.3f]\n",size,cold?"cold":"warm",off,best[0],best[1],ratios[30],ratios[15],ratios[45]);
}
