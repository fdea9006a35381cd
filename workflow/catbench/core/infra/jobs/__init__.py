"""What each job asks its scheduler for (threads, memory, time limit, isolation), sized
from the config; the Slurm partition limits those requests must fit; the record of
whether a measuring job ran alone."""
